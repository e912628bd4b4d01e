"""``mvpo/WebShop-v0``: WebShop's text-mode shopping task (docs/environments.md, "mvpo/WebShop-v0").

Modules: :mod:`~mvpo_envs.webshop.env` (the Gymnasium env), :mod:`~mvpo_envs.webshop.engine`
(pages, clicks, observations), :mod:`~mvpo_envs.webshop.reward` (WebShop's ``get_reward``),
:mod:`~mvpo_envs.webshop.nouns` (spaCy nouns or the fallback), :mod:`~mvpo_envs.webshop.search`
(BM25 backends), :mod:`~mvpo_envs.webshop.data` (WebShop file loaders, goals, splits),
:mod:`~mvpo_envs.webshop.generate` (the bundled catalog), :mod:`~mvpo_envs.webshop.expert`
(scripted expert and random players). See docs/webshop.md.

The env is ``mvpo_envs.webshop.env.WebShopEnv``; this package's ``__init__`` imports nothing
(its declaration, :mod:`.spec`, is read at ``import mvpo_envs``).
"""
