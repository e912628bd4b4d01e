"""Policies, generation backends and trackers are plug-ins behind registries
(docs/architecture.md, "A new policy, backend or tracker").

The main test adds a toy policy (a byte-level unigram model), a toy backend (it samples an
admissible action by the policy's own log-probs) and a toy tracker (rows kept in memory)
through :func:`register_policy`, :func:`register_backend` and :func:`register_tracker`, and
trains one iteration on the control task with them, then resumes for a second one: nothing of
the trainer is edited or patched. The other tests check the built-in entries, the one-line
errors for unknown names, and the prompt style ``paper`` with its former name ``seed``.
"""

from __future__ import annotations

import copy
import dataclasses
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
import torch

from mvpo_envs.declaration import DeclarationError, EnvDeclaration
from mvpo_train import backends as backend_registry
from mvpo_train import tracking
from mvpo_train.config import ConfigError, TrainConfig, build_parser, changed_fields
from mvpo_train.factories import frozen_copy, load_policy, make_generation_backend
from mvpo_train.metrics import read_metrics
from mvpo_train.policies import (
    Generates,
    Policy,
    available_policies,
    get_policy_kind,
    register_policy,
)
from mvpo_train.policies import registry as policy_registry
from mvpo_train.policy import ScoreResult
from mvpo_train.prompts import get_template, register_template
from mvpo_train.trainer import train

CHAIN = "mvpo/MilestoneChain-v0"


# ------------------------------------------------------------------ the toy plug-ins


class ByteUnigram(torch.nn.Module):
    """One logit per byte (and 256 = end): the log-prob of a response is the sum of its
    bytes' log-softmax, whatever the prompt."""

    def __init__(self) -> None:
        super().__init__()
        self.logits = torch.nn.Parameter(torch.zeros(257))

    def save_pretrained(self, folder: str | Path, safe_serialization: bool = True) -> None:
        from safetensors.torch import save_model

        Path(folder).mkdir(parents=True, exist_ok=True)
        save_model(self, str(Path(folder) / "model.safetensors"))


class UnigramPolicy:
    """A complete policy of the ``generate`` mode that is not a Hugging Face model."""

    pad_id = 256
    tokenizer = None  # nothing to save beside the weights

    def __init__(self, model: ByteUnigram, temperature: float = 1.0):
        self.model = model
        self.temperature = temperature

    @property
    def device(self) -> torch.device:
        return self.model.logits.device

    def prompt_ids(self, prompt: Any, template: Any, mode: str) -> list[int]:
        if mode != "generate":
            raise ValueError("the unigram policy only generates")
        return list(str(prompt).encode())

    def candidate_ids(self, action: str, template: Any) -> list[int]:
        return list(action.encode())

    def _logp(self) -> torch.Tensor:
        return torch.log_softmax(self.model.logits / self.temperature, dim=-1)

    def token_logprobs(self, prompts, responses, *, entropy: bool = False):
        logp = self._logp()
        out = [logp[torch.tensor(list(r), dtype=torch.long)] for r in responses]
        ent = -(logp.exp() * logp).sum()
        return out, ([ent.expand(len(r)) for r in responses] if entropy else None)

    def score_candidates(self, prompts, candidates, norm: str = "mean") -> ScoreResult:
        lp = self._logp()
        scores = [torch.stack([lp[torch.tensor(list(c))].sum() for c in cs]) for cs in candidates]
        return ScoreResult(scores, [(torch.zeros(len(cs), 0), [0] * len(cs)) for cs in candidates])

    def decode(self, ids: Sequence[int]) -> str:
        return bytes(i for i in ids if i < 256).decode(errors="replace")

    def frozen_copy(self) -> UnigramPolicy:
        return UnigramPolicy(copy.deepcopy(self.model).requires_grad_(False), self.temperature)


LOADED: list[tuple[Any, str | None]] = []


def load_unigram(cfg: TrainConfig, model: str | None = None) -> UnigramPolicy:
    LOADED.append((cfg, model))
    return UnigramPolicy(ByteUnigram(), cfg.temperature)


ADMISSIBLE = re.compile(r"admissible actions of the current situation are: \[(.*)\]\.")


class PickBackend:
    """Generates ``<think>..</think><action>X</action>`` with X drawn among the prompt's
    admissible actions by the policy's own log-probs (seeded)."""

    name = "toy-pick"

    def __init__(self, policy: UnigramPolicy, *, seed: int, top_p: float, temperature: float):
        self.policy, self.temperature = policy, temperature
        self.generator = torch.Generator().manual_seed(seed)
        self.calls = self.syncs = 0
        BACKENDS.append(self)

    def generate(self, prompts, max_new_tokens: int, *, greedy: bool = False):
        self.calls += 1
        out = []
        for ids in prompts:
            listed = ADMISSIBLE.findall(bytes(ids).decode())[-1]
            actions = re.findall(r"'([^']*)'", listed)
            texts = [f"<think>go</think><action>{a}</action>" for a in actions]
            with torch.no_grad():
                lp, _ = self.policy.token_logprobs([ids] * len(texts), [t.encode() for t in texts])
            probs = torch.softmax(torch.stack([x.sum() for x in lp]) / self.temperature, dim=0)
            pick = (
                int(probs.argmax())
                if greedy
                else int(torch.multinomial(probs, 1, generator=self.generator))
            )
            out.append(list(texts[pick].encode())[:max_new_tokens])
        return out

    def sync_weights(self, model: Any) -> None:
        assert model is self.policy.model
        self.syncs += 1

    def close(self) -> None:
        pass


BACKENDS: list[PickBackend] = []
TRACKED: list[dict[str, Any]] = []


class MemoryTracker:
    name = "toy-memory"

    def __init__(self, run_dir: Path, *, config: dict[str, Any], resume_step: int):
        self.record: dict[str, Any] = {
            "run_dir": run_dir, "config": config, "resume_step": resume_step,
            "rows": [], "closed": False,
        }  # fmt: skip
        TRACKED.append(self.record)

    def log(self, step: int, metrics: dict[str, float]) -> None:
        self.record["rows"].append((step, dict(metrics)))

    def close(self) -> None:
        self.record["closed"] = True


@pytest.fixture
def toys(monkeypatch):
    """The three toy plug-ins registered for one test (the registries restored after it)."""
    for table in (policy_registry.POLICIES, backend_registry.BACKENDS, tracking.TRACKERS):
        monkeypatch.setattr(table, "_entries", dict(table._entries))
        monkeypatch.setattr(table, "_factories", dict(table._factories))
    monkeypatch.setattr(tracking, "BACKENDS", dict(tracking.BACKENDS))
    register_policy("toy-unigram", load_unigram, action_modes=("generate",))
    backend_registry.register_backend(
        "toy-pick", PickBackend, config_fields={"temperature": "temperature"}
    )
    tracking.register_tracker("toy-memory", MemoryTracker)
    for kept in (LOADED, BACKENDS, TRACKED):
        kept.clear()


def _toy_cfg(run_dir: Path, **kw: Any) -> TrainConfig:
    base: dict[str, Any] = dict(
        run_dir=str(run_dir), env_id=CHAIN, policy="toy-unigram", backend="toy-pick",
        report_to=["toy-memory"], action_mode="generate", prompt_style="paper",
        max_new_tokens=64, num_groups=2, group_size=2, max_steps=4, iterations=1,
        kl_coef=0.05, temperature=0.7, lr=0.1, device="cpu", threads=1, progress=False,
        seed=3, estimator="rloo",
    )  # fmt: skip
    return TrainConfig(**{**base, **kw})


def test_toy_policy_backend_and_tracker_train_and_resume_through_their_registries(toys, tmp_path):
    run = tmp_path / "run"
    first = train(_toy_cfg(run))
    assert [r["iteration"] for r in first] == [1]
    (cfg, model), *_ = LOADED
    assert cfg.policy == "toy-unigram" and model is None
    backend = BACKENDS[0]
    assert backend.temperature == 0.7  # a config field the backend asked for
    assert backend.calls >= 4 and backend.syncs == 1  # one rollout of <= 4 steps, one update
    assert first[0]["steps"] >= 4 and first[0]["format_error_ratio"] == 0.0
    assert first[0]["invalid_action_ratio"] == 0.0  # admissible actions only
    (record,) = TRACKED
    assert record["closed"] and record["resume_step"] == 0 and record["run_dir"] == run
    assert [step for step, _ in record["rows"]] == [1]
    assert record["rows"][0][1]["success"] == first[0]["success"]
    assert record["config"]["policy"] == "toy-unigram"
    saved = (run / "checkpoints" / "iter-000001" / "model.safetensors").is_file()
    assert saved  # the toy model's own save_pretrained, under the checkpoint's checksums

    _saved_with_the_former_style_name(run / "checkpoints" / "iter-000001")
    second = train(_toy_cfg(run, iterations=2, resume=True, prompt_style="seed"))
    assert [r["iteration"] for r in second] == [2]
    assert [r["iteration"] for r in read_metrics(run)] == [1, 2]
    assert TRACKED[1]["resume_step"] == 1 and [s for s, _ in TRACKED[1]["rows"]] == [2]
    assert BACKENDS[1].syncs == 2  # the resumed weights, then the update


def _saved_with_the_former_style_name(ckpt: Path) -> None:
    """Make ``ckpt`` a checkpoint written before ``seed`` was renamed ``paper`` (its state's
    config says ``prompt_style: seed``; the checksum file updated to match)."""
    from .checkpoint_edit import edit_state

    def rename(state: dict) -> None:
        assert state["config"]["prompt_style"] == "paper"
        state["config"]["prompt_style"] = "seed"

    edit_state(ckpt, rename)


def test_an_action_mode_the_policy_does_not_play_is_one_line_before_it_loads(toys, tmp_path):
    with pytest.raises(ConfigError, match=r"^policy: 'toy-unigram' needs action_mode='generate'$"):
        train(_toy_cfg(tmp_path / "run", action_mode="score", prompt_style="compact"))
    assert LOADED == []  # refused before the policy was built


def test_builtin_entries_and_the_lm_policy_behind_the_protocol(micro, tmp_path):
    assert {"lm", "encoder"} <= set(available_policies())
    assert {"hf", "vllm"} <= set(backend_registry.available_backends())
    assert tracking.available_trackers()[:3] == ["tensorboard", "wandb", "trackio"]
    assert get_policy_kind("lm").generates and not get_policy_kind("encoder").generates
    assert get_policy_kind("lm").resolve_model("x/y") == "x/y"
    vllm = backend_registry.get_backend_kind("vllm")
    assert dict(vllm.config_fields) == {"gpu_memory_utilization": "vllm_gpu_memory_utilization"}

    cfg = TrainConfig(run_dir=str(tmp_path), model=str(micro), device="cpu", kl_coef=0.1)
    policy = load_policy(cfg)
    assert isinstance(policy, Policy) and isinstance(policy, Generates)  # the hf backend's needs
    toy = UnigramPolicy(ByteUnigram())
    assert isinstance(toy, Policy) and not isinstance(toy, Generates)  # it needs its own backend
    ref = frozen_copy(policy)
    assert isinstance(ref, Policy) and ref.model is not policy.model
    assert not any(p.requires_grad for p in ref.model.parameters()) and not ref.model.training
    prompt = [
        policy.prompt_ids("Task: x\ngo to fridge 1\n", get_template(CHAIN, "compact"), "score")
    ]
    cands = [
        [
            policy.candidate_ids(a, get_template(CHAIN, "compact"))
            for a in ("go to fridge 1", "look")
        ]
    ]
    with torch.no_grad():
        assert torch.equal(
            policy.score_candidates(prompt, cands).scores[0],
            ref.score_candidates(prompt, cands).scores[0],
        )
        next(policy.model.parameters()).add_(1.0)  # an update leaves the reference as it was
        assert not torch.equal(
            policy.score_candidates(prompt, cands).scores[0],
            ref.score_candidates(prompt, cands).scores[0],
        )
    backend = make_generation_backend(dataclasses.replace(cfg, action_mode="generate"), policy)
    assert backend.name == "hf" and backend.policy is policy
    assert make_generation_backend(cfg, policy) is None  # score mode: no backend


def test_unknown_names_are_one_line_listing_the_registered_ones(toys, tmp_path):
    for field, word in (("policy", "policy"), ("backend", "backend")):
        with pytest.raises(ConfigError) as err:
            TrainConfig(**{field: "no-such"})
        message = str(err.value)
        assert "\n" not in message and message.startswith(f"{field}: expected one of ")
        assert ("toy-unigram" if word == "policy" else "toy-pick") in message
    with pytest.raises(
        ConfigError, match=r"^policy: unknown policy 'nope'; registered: .*toy-unigram"
    ):
        get_policy_kind("nope")
    with pytest.raises(ConfigError, match=r"^backend: unknown backend 'nope'; registered: hf, "):
        backend_registry.make_backend("nope", None)
    with pytest.raises(
        ConfigError, match=r"^report_to: unknown tracker 'nope'; allowed: .*toy-memory, none, all$"
    ):
        TrainConfig(report_to="nope")
    assert TrainConfig(report_to="all").report_to[-1] == "toy-memory"  # needs no package
    build = build_parser()
    flags = {a.dest: a for a in build._actions}
    assert "toy-unigram" in flags["policy"].choices and "toy-pick" in flags["backend"].choices


PLUGIN = """
from test_registries import MemoryTracker, PickBackend, load_unigram
from mvpo_train.policies import register_policy

register_policy("ep-module", load_unigram, action_modes=("generate",))  # registers itself
"""


def test_entry_points_reach_the_command_line(toys, tmp_path, monkeypatch):
    """A package's entry points (a dist-info folder on sys.path, as pip writes it) name a
    policy, a backend and a tracker: loaded the first time the name is asked for."""
    monkeypatch.syspath_prepend(str(Path(__file__).parent))
    (tmp_path / "mvpo_toy_plugin.py").write_text(PLUGIN)
    info = tmp_path / "mvpo_toy_plugin-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: mvpo-toy-plugin\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(
        "[mvpo.policies]\nep-unigram = test_registries:load_unigram\n"
        "ep-module = mvpo_toy_plugin\n"
        "ep-broken = mvpo_no_such_module\n"
        "[mvpo.backends]\nep-pick = test_registries:PickBackend\n"
        "[mvpo.trackers]\nep-memory = test_registries:MemoryTracker\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    assert (
        "ep-unigram" in available_policies()
        and "ep-unigram" in build_parser()._option_string_actions["--policy"].choices
    )
    assert "ep-pick" in backend_registry.available_backends()
    assert "ep-memory" in tracking.available_trackers()
    cfg = _toy_cfg(tmp_path / "run", policy="ep-unigram", backend="ep-pick", report_to="ep-memory")
    assert get_policy_kind("ep-unigram").action_modes == ("score",)  # a factory: the defaults
    assert backend_registry.get_backend_kind("ep-pick").config_fields == {}
    assert tracking.TRACKERS.get("ep-memory").requires is None
    assert cfg.report_to == ["ep-memory"]
    assert get_policy_kind("ep-module").action_modes == ("generate",)  # as the module said
    with pytest.raises(ConfigError, match=r"^policy: expected one of lm, encoder, .*ep-module"):
        TrainConfig(policy="ep-missing")
    with pytest.raises(ConfigError) as err:
        TrainConfig(policy="ep-broken")
    assert str(err.value) == (
        "policy: the mvpo.policies entry point 'ep-broken' (mvpo_no_such_module) does not load: "
        "No module named 'mvpo_no_such_module'"
    )


def test_registering_a_taken_name_needs_overwrite(toys):
    with pytest.raises(ValueError, match="already registered"):
        register_policy("lm", load_unigram)
    with pytest.raises(ValueError, match="already registered"):
        backend_registry.register_backend("hf", PickBackend)
    with pytest.raises(ValueError, match="already registered"):
        tracking.register_tracker("wandb", MemoryTracker)
    with pytest.raises(ValueError, match="word of report_to"):
        tracking.register_tracker("none", MemoryTracker)
    with pytest.raises(ValueError, match="action_modes"):
        register_policy("bad", load_unigram, action_modes=("play",))
    register_policy("toy-unigram", load_unigram, overwrite=True)  # same factory: fine
    assert get_policy_kind("toy-unigram").action_modes == ("score",)


# ------------------------------------------------------------------ the prompt style's name


def test_paper_style_with_seed_as_its_former_name(tmp_path):
    for env_id in (CHAIN, "mvpo/ALFWorld-v0", "mvpo/SomeOther-v0"):
        assert get_template(env_id, "seed") is get_template(env_id, "paper")
    assert get_template(CHAIN) is get_template(CHAIN, "paper")  # the default style
    assert "<action>" in get_template(CHAIN, "paper").first
    assert TrainConfig(prompt_style="seed").prompt_style == "paper"
    args = build_parser().parse_args(["--prompt-style", "seed"])
    assert args.prompt_style == "paper"
    with pytest.raises(ConfigError, match="^prompt_style: expected one of compact, paper"):
        TrainConfig(prompt_style="seeds")
    # a run saved with the former name resumes: its config.yaml is not a changed setting
    cfg = TrainConfig(run_dir=str(tmp_path), prompt_style="paper", estimator="grpo")
    assert changed_fields({**cfg.to_dict(), "prompt_style": "seed"}, cfg) == {}
    assert "prompt_style" in changed_fields({**cfg.to_dict(), "prompt_style": "compact"}, cfg)


def test_declarations_and_registered_templates_read_seed_as_paper(monkeypatch):
    from mvpo_train import prompts

    tpl = get_template(CHAIN, "paper")
    decl = EnvDeclaration(id="toy/Env-v0", entry_point="x:Y", max_episode_steps=3,
                          prompts={"seed": tpl})  # fmt: skip
    assert dict(decl.prompts) == {"paper": tpl}
    with pytest.raises(DeclarationError, match=r"\['seed'\] and \['paper'\] name the same style"):
        EnvDeclaration(id="toy/Env-v0", entry_point="x:Y", max_episode_steps=3,
                       prompts={"seed": tpl, "paper": tpl})  # fmt: skip
    monkeypatch.setattr(prompts, "_TEMPLATES", dict(prompts._TEMPLATES))
    mine = dataclasses.replace(tpl, name="mine")
    register_template("toy/Env-v0", "seed", mine)
    assert get_template("toy/Env-v0", "paper") is mine
