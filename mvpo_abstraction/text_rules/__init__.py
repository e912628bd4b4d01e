"""Text rules shared by an environment and the abstractions that read its text.

docs/architecture.md ("Layers and imports"): the parsing and metric rules that both an
environment (``mvpo_envs``) and an abstraction (``mvpo_abstraction``) need live here, once, so
that the abstraction never imports the environment. One module per benchmark (e.g.
:mod:`mvpo_abstraction.text_rules.searchqa`) plus :mod:`mvpo_abstraction.text_rules.tags`
(linear-time scanning of ``<tag>...</tag>`` pairs). Modules here import only the standard
library.
"""
