"""Training configuration: one dataclass, presets, YAML files and command-line flags.

Every field has a help string (``metadata["help"]``); :func:`build_parser` turns the fields
into ``argparse`` flags (``--num-groups 4``, ``--no-progress``, ``--estimator-kwargs
'{"lambda_L": 0.3}'``). Values are layered: dataclass defaults < ``--preset`` < ``--config
x.yaml`` < explicit flags. Presets:

* ``cpu-tiny`` (default): the tiny bundled Qwen2 model, ``score`` action mode, and the env
  declaration's ``train_defaults`` for it (the default env: four tasks of its bundled ``mini``
  rooms), sized so that success visibly rises within about 9 minutes on 2 CPU
  cores (docs/training.md has the measured curve);
* ``cpu-showcase`` (``mvpo-showcase``, ``make run``): the ALFWorld study's MVPO arm, the
  ``encoder`` policy from the bundled warm start, 16 groups x 8 rollouts of 50 steps, lr 3e-4,
  2 PPO epochs, KL 0.05, 10 iterations, run folder ``runs/showcase`` (the env declaration
  gives its split, held-out split and model);
* ``gpu-qwen2.5-1.5b``: the MVPO paper's setting (``Qwen/Qwen2.5-1.5B-Instruct``, ``generate``
  mode with ``<think>``/``<action>``, 16 groups x 8 rollouts, lr 1e-6, KL 0.01 (low_var_kl),
  clip 0.2, gamma 0.95, 50 steps per episode, 150 iterations, vLLM rollouts).

Env-specific defaults are never written here: each env's declaration
(``mvpo_envs/<env>/spec.py``, ``train_defaults``) gives its ``tasks`` / ``env_kwargs`` per preset,
applied for the fields a run does not set (:func:`with_preset_env_kwargs`).

Validation lives in ONE place, the field declarations (docs/training.md, "Reliability"):
the type annotation (``int``, ``float``, ``Literal[...]`` for enum-like fields; ``policy`` and
``backend`` take any name of their registry, :data:`REGISTRY_FIELDS`) and the bounds in the
field metadata (``ge``, ``gt``, ``le``). :meth:`TrainConfig.__post_init__`,
the argparse ``choices`` and the help texts are all derived from them. The estimator name
and its ``estimator_kwargs`` are checked when the config is built (by building the
estimator), so a typo fails before any model loads. Every failure is a :class:`ConfigError`:
one line naming the field (or file) and what is allowed.

Beyond the per-field checks, :meth:`TrainConfig.__post_init__` refuses (docs/training.md,
"Reliability"): a NaN or infinite number anywhere (float fields and inside the JSON fields
``env_kwargs``, ``estimator_kwargs``, ``abstraction_kwargs``), an integer outside int64, a
seed outside ``0 <= seed < 2**32`` (what ``numpy.random.seed`` accepts), an ``env_kwargs`` key
that repeats a dedicated field with another value (``split``, ``max_episode_steps`` vs
``max_steps``, ``abstraction``) or that the trainer sets itself, and ``abstraction_kwargs`` /
``abstraction_refit_every`` without ``--abstraction learned``. Config files and JSON flags are
read with :mod:`mvpo_envs.data_files` (bounded nesting, duplicate YAML keys refused, UTF-8).
"""

from __future__ import annotations

import argparse
import copy
import dataclasses
import difflib
import functools
import math
import re
import types
import typing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from mvpo_envs.cli_args import FlagSpellingParser
from mvpo_envs.declaration import STYLE_ALIASES, default_env_id, get_declaration
from mvpo_train.backends import BACKENDS
from mvpo_train.errors import ConfigError  # re-exported: every caller imports it from here
from mvpo_train.policies.registry import POLICIES
from mvpo_train.run_artifacts import RUN_ARTIFACTS
from mvpo_train.tracking import normalize_report_to

__all__ = [
    "PRESETS",
    "ConfigError",
    "TrainConfig",
    "build_estimator",
    "build_parser",
    "changed_fields",
    "choices_of",
    "config_from_args",
    "env_train_defaults",
    "with_preset_env_kwargs",
    "load_config",
    "preset",
    "resume_safe_fields",
]


#: largest seed: ``numpy.random.seed`` (and vLLM, which calls it) takes ``0 <= seed < 2**32``
SEED_MAX = 2**32 - 1
#: bound of every integer field and of every integer inside the JSON fields (int64)
INT_MAX = 2**63 - 1
#: most environments of one batch (``num_groups * group_size``); more would exhaust memory
MAX_ENVS = 65536
#: deepest nesting accepted inside ``env_kwargs`` / ``estimator_kwargs`` / ``abstraction_kwargs``
JSON_MAX_DEPTH = 100
#: ``env_kwargs`` keys that repeat a dedicated field: ``key -> field``. A value that differs
#: from the field's is refused (the trainer would silently use one of the two).
ENV_KWARG_FIELDS = {
    "split": "split",
    "max_episode_steps": "max_steps",
    "abstraction": "abstraction",
}
#: ``env_kwargs`` keys the trainer passes to ``GroupedVectorEnv`` itself: ``key -> field``
TRAINER_ENV_KEYS = {"env_id": "env_id", "num_groups": "num_groups", "group_size": "group_size",
                    "vectorization_mode": "vectorization", "vector_kwargs": "vectorization"}  # fmt: skip
#: ``abstraction_kwargs`` keys that repeat a dedicated field (refused: use the field)
REFIT_KWARG_FIELDS = {"refit_every": "abstraction_refit_every", "seed": "seed"}
#: ranges of the ``RefitConfig`` fields (docs/abstractions.md, "In the trainer")
REFIT_BOUNDS: dict[str, dict[str, int]] = {
    "fit_after": {"ge": 1}, "window": {"ge": 1}, "k": {"ge": 1}, "top_k": {"ge": 1},
    "min_support": {"ge": 1},
}  # fmt: skip


# Enum-like fields: the Literal is the only list of allowed values (flags, checks, help).
ActionMode = Literal["score", "generate"]
PolicyKind = Literal["lm", "encoder"]  # the built-in names; any registered one is accepted
PromptStyle = Literal["compact", "paper"]  # "seed", the former name of "paper", reads as it
ScoreNorm = Literal["mean", "sum"]
ScoreLogprob = Literal["choice", "tokens"]
ScoreImpl = Literal["kv", "concat"]
EncoderHead = Literal["factored", "concat"]
EmbeddingRuntime = Literal["auto", "onnx", "torch"]
EmbeddingBatching = Literal["auto", "rows1", "pad8xdyn"]
Backend = Literal["hf", "vllm"]  # the built-in names; any registered one is accepted
RatioLevel = Literal["token", "sequence"]
LossAgg = Literal["token-mean", "seq-mean-token-sum", "seq-mean-token-mean"]
Vectorization = Literal["sync", "async", "ray"]
Parallelism = Literal["ddp", "fsdp"]
Dtype = Literal["float32", "bfloat16", "float16", "auto"]
AttnImpl = Literal["auto", "sdpa", "eager", "flash_attention_2"]
#: fields whose allowed values are a registry's names (built-in, registered, entry points): the
#: argparse choices and the check read the registry when they run (docs/architecture.md, "A new
#: policy, backend or tracker"); their ``Literal`` lists the built-in names
REGISTRY_FIELDS: dict[str, typing.Any] = {"policy": POLICIES, "backend": BACKENDS}
#: field -> {former value: current value}: a former value is read as the current one
#: (configs, flags and checkpoints written before a rename)
FIELD_ALIASES: dict[str, typing.Mapping[str, str]] = {"prompt_style": STYLE_ALIASES}


def env_folder_name(env_id: str) -> str:
    """An env id's name for a run folder: lower case, without namespace and version
    (``mvpo/ALFWorld-v0`` -> ``alfworld``)."""
    return re.sub(r"-v\d+$", "", env_id.rsplit("/", 1)[-1]).lower()


def _f(default: Any, help: str, **kw: Any) -> Any:
    """A field with its help text and checks: ``ge``/``gt``/``le`` bounds, ``safe=True`` when
    a resumed run may change it (docs/training.md, "Reliability"), ``before``: the value that
    gives the behaviour from before the field existed, when it is not the default."""
    if isinstance(default, dict | list):
        return field(default_factory=lambda d=default: type(d)(d), metadata={"help": help, **kw})
    return field(default=default, metadata={"help": help, **kw})


@dataclass
class TrainConfig:
    """All settings of ``mvpo-train`` / ``mvpo-eval`` (see the module docstring)."""

    # -- run ---------------------------------------------------------------------------------
    run_dir: str = _f(
        f"runs/cpu-tiny/{env_folder_name(default_env_id())}-mvpo-seed0",
        "output folder: metrics.jsonl, checkpoints, plots (default: runs/<preset>/<env>-"
        "<estimator>-seed<seed>, or the first free <that>-2, -3, ... when it holds a run; "
        "--resume / --overwrite take the newest of them; the showcase preset: runs/showcase)",
        safe=True,
    )
    seed: int = _f(
        0, "seed of everything random (tasks, sampling, minibatch order)", ge=0, le=SEED_MAX
    )
    iterations: int = _f(30, "training iterations (one rollout batch + one update each)", gt=0,
                         safe=True)  # fmt: skip
    resume: bool = _f(
        False, "continue from the newest intact checkpoint in run_dir (bit-for-bit)", safe=True
    )
    overwrite: bool = _f(
        False,
        "start afresh in a run_dir that holds a run: the old run is moved to <run_dir>.old-N",
        safe=True,
    )
    save_every: int = _f(
        1, "save a checkpoint every N iterations (0 = only at the end)", ge=0, safe=True
    )
    keep_checkpoints: int = _f(2, "how many checkpoints to keep", gt=0, safe=True)
    record_every: int = _f(
        1,
        "write a batch record (records/iter-K.npz, docs/inspect.md) every N iterations; 0 = never",
        ge=0,
        safe=True,
    )
    stop_after: int = _f(
        0, "stop this process after N iterations as if killed (0 = never; tests)", ge=0, safe=True
    )
    threads: int = _f(
        0,
        "torch CPU threads (torch.set_num_threads); 0 = auto: the CPUs free when the run starts, "
        "1 when other processes hold them (mvpo_train.threads); a resumed auto run keeps the "
        "count saved in its config.yaml (bit-exact resume)",
        ge=0,
        le=4096,
    )
    parallelism: Parallelism = _f(
        "ddp", "with --nproc/torchrun: ddp (replicated model) | fsdp (FSDP2 shards it; "
        "docs/scaling.md)", safe=True,
    )  # fmt: skip
    progress: bool = _f(True, "show a tqdm progress bar", safe=True)
    tensorboard: bool = _f(
        True, "deprecated (use report_to): false drops TensorBoard from the default", safe=True
    )
    report_to: list | None = _f(
        None,
        "trackers besides metrics.jsonl: tensorboard,wandb,trackio (a list or comma string), "
        "none, or all (every one installed); unset = tensorboard when installed; nothing is "
        "uploaded by default (docs/training.md, Tracking)",
        safe=True,
    )
    # -- environment -------------------------------------------------------------------------
    env_id: str = _f(
        default_env_id(),
        "Gymnasium env id: a declared mvpo env (mvpo_envs.declaration) or any registered id",
    )
    split: str = _f("train", "training split passed to gym.make(split=...)")
    env_kwargs: dict = _f({}, 'extra gym.make keywords as JSON, e.g. \'{"data_dir": "/data"}\'')
    num_groups: int = _f(4, "task groups per batch (B)", gt=0)
    group_size: int = _f(8, "rollouts per task (G)", gt=0)
    max_steps: int = _f(20, "episode step limit (0 = the env's registered limit)", ge=0)
    tasks: list | None = _f(
        None,
        "train only on these task indices of the split (empty = sample all its tasks; "
        "default: the env declaration's tasks for the preset, else empty)",
    )
    abstraction: str = _f(
        "",
        "abstraction of the envs: '' = the env's rules, a registered name, NAME:PATH "
        "(learned:DIR), or 'learned' to fit one from this run's rollouts (docs/abstractions.md)",
    )
    abstraction_refit_every: int = _f(
        0, "with --abstraction learned: refit every K iterations (0 = fit once)", ge=0
    )
    abstraction_kwargs: dict = _f(
        {},
        'with --abstraction learned: RefitConfig fields as JSON, e.g. \'{"k": 8, "window": 4}\'',
    )
    vectorization: Vectorization = _f(
        "sync", "vector env mode (async gives the same results as sync)", safe=True
    )
    # -- policy ------------------------------------------------------------------------------
    model: str = _f("tiny-qwen2", "model folder or hub id ('tiny-qwen2' = the bundled tiny model)")
    device: str = _f("auto", "cpu | cuda | cuda:N | auto")
    dtype: Dtype = _f("float32", "parameter dtype")
    attn_implementation: AttnImpl = _f("auto", "attention kernel (auto = the model's default)")
    policy: PolicyKind = _f(
        "lm",
        "a registered policy (mvpo_train.policies): lm (causal LM) | encoder (frozen MiniLM + "
        "trainable action scorer, docs/policies.md)",
    )
    embedding_cache: str = _f(
        "",
        "encoder policy: a file of sentence-encoder embeddings shared across runs (loaded at "
        "start, merged back at each checkpoint; '' = in memory only; docs/policies.md)",
        safe=True,
    )
    encoder_head: EncoderHead = _f(
        "factored",
        "encoder policy: how the action scorer's first layer is computed; factored (one "
        "per-prompt part + one product per candidate, ~9x fewer FLOPs) | concat (the first "
        "form: the concatenated input per candidate). Same weights, same files, scores equal "
        "up to float rounding; concat reproduces runs made before factored existed bit for "
        "bit (docs/policies.md, 'The head')",
    )
    embedding_runtime: EmbeddingRuntime = _f(
        "auto",
        "encoder policy: where MiniLM runs (str); auto (default: onnx when onnxruntime and onnx "
        "import, else torch) | onnx (onnxruntime on an ONNX export made once, checked against "
        "PyTorch and cached; needs onnxruntime and onnx) | torch (PyTorch, the first runtime). "
        "Vectors agree within 1e-5 (about 3e-7 measured) but not bit for bit, so the runtime is "
        "part of the --embedding-cache key (one section per runtime) and a resumed run keeps "
        "its own: auto on --resume takes the runtime its config.yaml recorded (torch for a run "
        "from before this field or before auto was the default). onnx uses --threads intra-op "
        "threads (docs/policies.md, 'Where MiniLM runs')",
        before="torch",
    )
    embedding_batching: EmbeddingBatching = _f(
        "auto",
        "encoder policy: how MiniLM's forward passes are batched on onnxruntime (str); auto "
        "(default: pad8xdyn where its masked ONNX export passes its build check, else rows1 "
        "with one log line) | pad8xdyn (a text padded to its length + 2 rounded up to a "
        "multiple of 8, padding masked; every text of one padded length of a call in one pass "
        "of 2-64 rows; a failed export check is one error line) | rows1 (one text per pass, "
        "no padding; every run before this field). On --embedding-runtime torch PyTorch's own "
        "scheme runs (pad8xdyn is refused). A text's vector never depends on its neighbours, "
        "but the two schemes' vectors differ in their last bits, so the batching is part of "
        "the --embedding-cache key (one section each) and a resumed run keeps its own: auto on "
        "--resume takes the batching its config.yaml recorded (rows1 for a run from before "
        "this field). pad8xdyn was 1.13-1.22x faster than rows1 on the short texts of a "
        "household env's iteration, 0.96x on a shop env's long ones (benchmarks/results/"
        "embedding_batching.md; docs/policies.md, 'Where MiniLM runs')",
        before="rows1",
    )
    action_mode: ActionMode = _f("score", "score (rank admissible actions) | generate (free text)")
    prompt_style: PromptStyle = _f(
        "compact",
        "prompt template style: compact (a short transcript, score mode) | paper (the MVPO "
        "paper's agent prompt; 'seed', its former name, reads as paper)",
    )
    history_length: int = _f(2, "past (observation, action) pairs shown in the prompt", ge=0)
    temperature: float = _f(1.0, "sampling temperature (also used for every log-prob)", gt=0)
    score_norm: ScoreNorm = _f(
        "mean", "score mode: candidate score = mean or sum of token log-probs"
    )
    score_logprob: ScoreLogprob = _f(
        "choice",
        "score mode policy log-prob for PPO: choice (log-softmax over candidates) | tokens "
        "(the action's token log-probs)",
    )
    score_impl: ScoreImpl = _f("kv", "score mode batching: kv (reuse prompt KV cache) | concat")
    max_new_tokens: int = _f(256, "generate mode: response token limit", gt=0)
    top_p: float = _f(1.0, "generate mode: nucleus sampling", gt=0, le=1)
    invalid_penalty: float = _f(
        0.1, "reward penalty for malformed generations (recorded apart)", ge=0
    )
    require_think: bool = _f(False, "generate mode: a missing <think> block is malformed")
    backend: Backend = _f(
        "hf", "generate mode backend, a registered one (mvpo_train.backends): hf | vllm"
    )
    vllm_gpu_memory_utilization: float = _f(
        0.3, "vllm: share of GPU memory for the engine", gt=0, le=1
    )
    max_tokens_per_forward: int = _f(16384, "padded tokens per forward pass (memory bound)", gt=0)
    # -- LoRA (docs/training.md, "LoRA"; the lora extra: pip install 'mvpo[lora]') -------------
    lora_rank: int = _f(
        0, "rank of LoRA adapters trained through peft, base weights frozen (0 = no LoRA: "
        "train every weight)", ge=0, le=65536,
    )  # fmt: skip
    lora_alpha: float = _f(16.0, "LoRA: the adapters are scaled by lora_alpha / lora_rank", gt=0)
    lora_dropout: float = _f(0.0, "LoRA: dropout on the adapters' input, 0 <= p < 1", ge=0)
    lora_target_modules: list = _f(
        ["q_proj", "k_proj", "v_proj", "o_proj"],
        "LoRA: modules that get adapters, by name (q_proj,v_proj) or all-linear",
    )
    lora_merge_to: str = _f(
        "", "LoRA: when the run completes, write the merged model (from_pretrained loads it) "
        "to this new folder ('' = do not merge)", safe=True,
    )  # fmt: skip
    # -- advantage ---------------------------------------------------------------------------
    estimator: str = _f(
        "mvpo", "credit estimator: grpo gigpo mvpo ecpo progpo beacon rloo reinforce"
    )
    gamma: float = _f(0.95, "discount of step returns (estimators that take it)", ge=0, le=1)
    estimator_kwargs: dict = _f({}, "extra estimator config as JSON (docs/estimators.md fields)")
    # -- optimisation ------------------------------------------------------------------------
    lr: float = _f(3e-3, "AdamW learning rate", gt=0)
    weight_decay: float = _f(0.0, "AdamW weight decay", ge=0)
    adam_eps: float = _f(1e-8, "AdamW epsilon", gt=0)
    clip_ratio: float = _f(0.2, "PPO clip range (both sides unless clip_ratio_high is set)", gt=0)
    clip_ratio_high: float = _f(0.0, "PPO upper clip (0 = same as clip_ratio)", ge=0)
    ratio_level: RatioLevel = _f("token", "PPO ratio per token or per step (sequence)")
    loss_agg: LossAgg = _f("token-mean", "PPO loss aggregation")
    kl_coef: float = _f(
        0.0, "weight of low_var_kl (k3) to the frozen reference (0 = no reference)", ge=0
    )
    entropy_coef: float = _f(0.0, "entropy bonus weight", ge=0)
    ppo_epochs: int = _f(4, "passes over each batch", gt=0)
    minibatch_size: int = _f(128, "steps per optimizer step (0 = whole batch)", ge=0)
    micro_batch_size: int = _f(64, "steps per forward/backward (gradient accumulation)", gt=0)
    max_grad_norm: float = _f(1.0, "gradient clipping norm (0 = off)", ge=0)
    skip_zero_adv: bool = _f(
        True, "skip steps whose advantage is 0 in the update when kl and entropy are off"
    )
    # -- evaluation --------------------------------------------------------------------------
    eval_every: int = _f(
        0, "evaluate every N iterations (0 = never during training)", ge=0, safe=True
    )
    eval_split: str = _f("eval", "evaluation split", safe=True)
    eval_episodes: int = _f(1, "episodes per evaluation task", gt=0, le=4096, safe=True)
    eval_max_tasks: int = _f(0, "evaluate on at most N tasks (0 = all)", ge=0, safe=True)
    eval_greedy: bool = _f(True, "greedy (argmax) actions in evaluation", safe=True)

    def __post_init__(self) -> None:
        if self.tasks is None:  # the field defaults are the default preset's
            self.tasks = list(env_train_defaults(DEFAULT_PRESET, self.env_id).get("tasks", []))
        self.report_to = normalize_report_to(self.report_to)  # "a,b" / none / all -> a list
        for name, aliases in FIELD_ALIASES.items():  # a former name (seed) -> the current one
            value = getattr(self, name)
            if isinstance(value, str) and value in aliases:
                setattr(self, name, aliases[value])
        hints = _hints()
        if isinstance(self.lora_target_modules, str):  # YAML/API: "all-linear" or "q_proj,v_proj"
            self.lora_target_modules = [x.strip() for x in self.lora_target_modules.split(",")]
        for f in dataclasses.fields(self):
            value = _check_value(f.name, getattr(self, f.name), hints[f.name], f.metadata)
            setattr(self, f.name, value)
        for i, t in enumerate(self.tasks):
            if isinstance(t, bool) or not isinstance(t, int) or not 0 <= t <= INT_MAX:
                raise ConfigError(f"tasks[{i}]: expected a task index >= 0, got {_short(t)}")
        for name in ("env_kwargs", "estimator_kwargs", "abstraction_kwargs"):
            _check_json_value(name, getattr(self, name))
        if not self.run_dir.strip():  # "" would write the run into the current folder
            raise ConfigError("run_dir: empty; give an output folder such as runs/my-run")
        for name in ("env_id", "split", "eval_split", "model", "estimator"):
            if not getattr(self, name).strip():  # a silent default, or an error naming nothing
                raise ConfigError(f"{name}: empty; `mvpo-train --help` shows what it takes")
        if not re.fullmatch(r"auto|cpu|mps|cuda(:\d+)?", self.device):
            raise ConfigError(
                f"device: expected auto, cpu, cuda, cuda:N or mps; got {self.device!r}"
            )
        if self.num_groups * self.group_size > MAX_ENVS:
            raise ConfigError(
                f"num_groups / group_size: {self.num_groups} x {self.group_size} environments "
                f"in one batch; at most {MAX_ENVS}"
            )
        self._check_conflicts()
        self._check_lora()
        build_estimator(self)  # unknown estimator or kwarg: fails here, before any model loads
        if self.abstraction == "learned":
            build_refit_config(self)

    def _check_conflicts(self) -> None:
        """Two settings that say different things: refused, never one silently kept."""
        for key, name in ENV_KWARG_FIELDS.items():
            if key not in self.env_kwargs:
                continue
            value, own = self.env_kwargs[key], getattr(self, name)
            unset = own in ("", 0) and name != "split"  # the field leaves it to env_kwargs
            if not unset and value != own and not (name == "abstraction" and own == "learned"):
                raise ConfigError(
                    f"env_kwargs / {name}: env_kwargs[{key!r}] = {_short(value)} conflicts with "
                    f"{name} = {own!r}; set it with {name} only"
                )
        for key, name in TRAINER_ENV_KEYS.items():
            if key in self.env_kwargs:
                raise ConfigError(
                    f"env_kwargs: {key!r} is set by the trainer (from the field {name}); "
                    "remove it from env_kwargs"
                )
        if not self.tensorboard and "tensorboard" in (self.report_to or []):
            raise ConfigError(
                f"tensorboard / report_to: tensorboard is false but report_to = {self.report_to}; "
                "set it with report_to only (tensorboard is deprecated)"
            )
        if self.abstraction != "learned":
            for name in ("abstraction_kwargs", "abstraction_refit_every"):
                if getattr(self, name):
                    raise ConfigError(
                        f"{name}: only used with --abstraction learned (abstraction is "
                        f"{self.abstraction!r}); remove it or set abstraction to learned"
                    )

    def _check_lora(self) -> None:
        """The ``lora_*`` fields: used only with ``lora_rank > 0``, an LM policy, DDP."""
        names = self.lora_target_modules
        for i, name in enumerate(names):
            if not isinstance(name, str) or not re.fullmatch(r"[\w.-]+", name):
                raise ConfigError(
                    f"lora_target_modules[{i}]: expected a module name such as q_proj, got "
                    f"{_short(name)}"
                )
        if not names or ("all-linear" in names and len(names) > 1):
            raise ConfigError(
                f"lora_target_modules: expected module names (q_proj,v_proj) or all-linear alone, "
                f"got {_short(names)}"
            )
        if not self.lora_dropout < 1:
            raise ConfigError(f"lora_dropout: must be < 1, got {self.lora_dropout}")
        if self.lora_rank == 0:
            for f in dataclasses.fields(self):
                if f.name.startswith("lora_") and f.name != "lora_rank":
                    default = f.default_factory() if callable(f.default_factory) else f.default
                    if getattr(self, f.name) != default:
                        raise ConfigError(
                            f"{f.name}: only used with LoRA (lora_rank is 0); set --lora-rank "
                            "or remove it"
                        )
            return
        if self.policy != "lm":
            raise ConfigError(
                f"lora_rank: LoRA adapts the LM policy; policy={self.policy!r} trains its own "
                "small head (docs/policies.md); remove lora_rank or use policy=lm"
            )
        if self.parallelism == "fsdp":
            raise ConfigError(
                "lora_rank: LoRA runs with parallelism=ddp (only the adapters are all-reduced); "
                "FSDP with LoRA is not supported"
            )

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


# ------------------------------------------------------------------ validation (one place)


_KIND_WORDS = {int: "an integer", float: "a number", bool: "true or false", str: "a string",
               dict: "a mapping (JSON object)", list: "a list"}  # fmt: skip


@functools.cache
def _hints() -> dict[str, Any]:
    return typing.get_type_hints(TrainConfig)


def choices_of(name: str) -> tuple[str, ...] | None:
    """The allowed values of an enum-like field (its ``Literal``; a registry field's registered
    names, :data:`REGISTRY_FIELDS`), else None."""
    if name in REGISTRY_FIELDS:
        return tuple(REGISTRY_FIELDS[name].names())
    tp = _hints()[name]
    return tuple(typing.get_args(tp)) if typing.get_origin(tp) is Literal else None


def resume_safe_fields() -> frozenset[str]:
    """Fields a resumed run may change without changing what it computes (``safe=True``)."""
    return frozenset(f.name for f in dataclasses.fields(TrainConfig) if f.metadata.get("safe"))


def _base_type(tp: Any) -> Any:
    origin = typing.get_origin(tp)
    if origin in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(tp) if a is not type(None)]
        return _base_type(args[0])
    if origin is Literal:
        return str
    return origin or tp


def _bounds_text(meta: typing.Mapping[str, Any]) -> str:
    parts = [f"{op} {meta[key]}" for key, op in (("gt", ">"), ("ge", ">="), ("le", "<="))
             if key in meta]  # fmt: skip
    return " and ".join(parts)


def _check_value(name: str, value: Any, tp: Any, meta: typing.Mapping[str, Any]) -> Any:
    """``value`` checked against the field's type and bounds (floats: ints and numeric
    strings such as YAML's ``1e-3`` are converted); raises :class:`ConfigError`."""
    if value is None and type(None) in typing.get_args(tp):  # e.g. report_to unset
        return None
    allowed = typing.get_args(tp) if typing.get_origin(tp) is Literal else None
    if name in REGISTRY_FIELDS:  # a registered name (an entry point's is loaded now)
        table = REGISTRY_FIELDS[name]
        if isinstance(value, str) and table.known(value):
            return value
        allowed = tuple(table.names())
    if allowed is not None:
        if isinstance(value, dict | list) or value not in allowed:  # unhashable: not a choice
            raise ConfigError(
                f"{name}: expected one of {', '.join(map(str, allowed))}; got {_short(value)}"
            )
        return value
    kind = _base_type(tp)
    ok = isinstance(value, kind) and not (kind is not bool and isinstance(value, bool))
    if kind is float and not ok:
        if isinstance(value, int) and not isinstance(value, bool):
            value, ok = (float(value) if abs(value) <= INT_MAX else math.inf), True
        elif isinstance(value, str):
            try:
                value, ok = float(value), True
            except ValueError:
                ok = False
    if not ok:
        raise ConfigError(
            f"{name}: expected {_KIND_WORDS.get(kind, kind.__name__)}, got {_short(value)} "
            f"({type(value).__name__})"
        )
    if kind is float and not math.isfinite(value):
        raise ConfigError(f"{name}: expected a finite number, got {value!r}")
    if kind is str and "\x00" in value:  # no path, id or name holds one; os calls refuse it
        raise ConfigError(f"{name}: contains a NUL character, got {_short(value)}")
    if kind in (int, float):
        bad = (
            ("gt" in meta and not value > meta["gt"])
            or ("ge" in meta and not value >= meta["ge"])
            or ("le" in meta and not value <= meta["le"])
        )
        if bad:
            raise ConfigError(f"{name}: must be {_bounds_text(meta)}, got {_short(value)}")
    if kind is int and abs(value) > INT_MAX:
        raise ConfigError(f"{name}: integer out of range (|x| < 2**63), got {_short(value)}")
    return value


def _short(value: Any, width: int = 60) -> str:
    """``repr(value)`` cut to ``width`` characters (a 5,000-digit integer stays one line)."""
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > 200:
        return f"a {value.bit_length()}-bit integer"
    text = repr(value)
    return text if len(text) <= width else text[: width - 3] + "..."


_JSON_TYPES = (str, int, float, bool, type(None), list, dict)


def _check_json_value(where: str, value: Any, depth: int = 0) -> None:
    """A value of a JSON field: JSON types only (YAML dates, sets, bytes refused), string keys,
    finite numbers, integers within int64, nesting at most :data:`JSON_MAX_DEPTH` deep."""
    if depth > JSON_MAX_DEPTH:
        raise ConfigError(f"{where}: nested deeper than {JSON_MAX_DEPTH} levels")
    if not isinstance(value, _JSON_TYPES) or isinstance(value, tuple):
        raise ConfigError(
            f"{where}: expected JSON values (null, true/false, numbers, strings, lists, "
            f"mappings), got {_short(value)} ({type(value).__name__})"
        )
    if isinstance(value, float) and not math.isfinite(value):
        raise ConfigError(f"{where}: expected a finite number, got {value!r}")
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) > INT_MAX:
        raise ConfigError(f"{where}: integer out of range (|x| < 2**63), got {_short(value)}")
    if isinstance(value, dict):
        for k, v in value.items():
            if not isinstance(k, str):
                raise ConfigError(f"{where}: keys must be strings, got {_short(k)}")
            _check_json_value(f"{where}[{k!r}]", v, depth + 1)
    elif isinstance(value, list):
        for i, v in enumerate(value):
            _check_json_value(f"{where}[{i}]", v, depth + 1)


def build_refit_config(cfg: TrainConfig) -> Any:
    """The ``RefitConfig`` of ``--abstraction learned``: ``abstraction_refit_every``, ``seed``
    and ``abstraction_kwargs``; an unknown key, a wrong type or a value out of range is a
    :class:`ConfigError` naming ``abstraction_kwargs``."""
    from mvpo_train.abstraction_refit import RefitConfig

    kwargs = dict(cfg.abstraction_kwargs)
    hints = typing.get_type_hints(RefitConfig)
    for key, value in kwargs.items():
        where = f"abstraction_kwargs[{key!r}]"
        if key in REFIT_KWARG_FIELDS:
            raise ConfigError(f"{where}: set it with the field {REFIT_KWARG_FIELDS[key]} instead")
        if key not in hints:
            valid = sorted(set(hints) - set(REFIT_KWARG_FIELDS))
            hint = difflib.get_close_matches(key, valid, n=1)
            raise ConfigError(
                f"{where}: unknown field" + (f" (did you mean {hint[0]!r}?)" if hint else "")
                + f"; valid: {', '.join(valid)}"
            )  # fmt: skip
        tp = hints[key]
        if value is None and type(None) in typing.get_args(tp):
            continue
        _check_value(where, value, tp, REFIT_BOUNDS.get(key, {}))
    try:
        return RefitConfig(
            **{"refit_every": cfg.abstraction_refit_every, "seed": cfg.seed, **kwargs}
        )
    except (TypeError, ValueError) as err:
        raise ConfigError(f"abstraction_kwargs: {err}".replace("\n", " ")) from None


def build_estimator(cfg: TrainConfig) -> Any:
    """``get_estimator(cfg.estimator, gamma=..., **estimator_kwargs)``; ``gamma`` is dropped
    for estimators without a discount (GRPO, RLOO, REINFORCE). Bad names or kwargs raise
    :class:`ConfigError` naming ``estimator`` / ``estimator_kwargs``."""
    from mvpo_train.credit import available_estimators, get_estimator

    kwargs = dict(cfg.estimator_kwargs)
    try:
        try:
            return get_estimator(cfg.estimator, **{"gamma": cfg.gamma, **kwargs})
        except TypeError as err:
            if "gamma" not in str(err) or "gamma" in kwargs:
                raise
            return get_estimator(cfg.estimator, **kwargs)
    except KeyError:
        raise ConfigError(
            f"estimator: unknown estimator {cfg.estimator!r}; allowed: "
            f"{', '.join(available_estimators())}"
        ) from None
    except (TypeError, ValueError) as err:
        raise ConfigError(f"estimator_kwargs: {err}".replace("\n", " ")) from None


def _with_mvpo_form(config: dict[str, Any], form: str) -> dict[str, Any]:
    """``config`` with MVPO's ``form`` named in ``estimator_kwargs`` (``form`` if unnamed), by
    its current name (``seeds`` is ``paper``, docs/estimators.md §3.8)."""
    from mvpo_train.credit.mvpo import FORM_ALIASES

    kwargs = config.get("estimator_kwargs")
    if config.get("estimator") != "mvpo" or not isinstance(kwargs, dict):
        return config
    named = kwargs.get("form", form)
    return {**config, "estimator_kwargs": {**kwargs, "form": FORM_ALIASES.get(named, named)}}


def changed_fields(
    saved: dict[str, Any], cfg: TrainConfig, saved_estimator_state: dict[str, Any] | None = None
) -> dict[str, tuple[Any, Any]]:
    """Fields (not resume-safe) whose value differs between a saved config and ``cfg``:
    ``name -> (saved value, new value)``; a field missing on one side counts as changed,
    except a field that the saved config predates and ``cfg`` sets to the behaviour from before
    it existed: its ``before`` (a field whose default changed since, ``embedding_runtime``),
    else its default (a new field's default keeps that behaviour, e.g. ``lora_rank = 0``)."""
    from mvpo_train.credit.mvpo import DEFAULT_FORM, FORM_BEFORE_DEFAULT_CHANGE

    # MVPO's form as each side runs it: a checkpoint that records no form (saved before the
    # default changed, docs/estimators.md §3.10) ran its named form, else the old default
    ran = (saved_estimator_state or {}).get("form", FORM_BEFORE_DEFAULT_CHANGE)
    saved = _with_mvpo_form(saved, ran)
    saved = {  # a former value (prompt_style: seed) is the current one
        k: FIELD_ALIASES[k].get(v, v) if k in FIELD_ALIASES and isinstance(v, str) else v
        for k, v in saved.items()
    }
    now = _with_mvpo_form(cfg.to_dict(), DEFAULT_FORM)
    safe = resume_safe_fields()
    missing = object()
    defaults = TrainConfig().to_dict()
    for f in dataclasses.fields(TrainConfig):
        if "before" in f.metadata:
            defaults[f.name] = f.metadata["before"]
    out: dict[str, tuple[Any, Any]] = {}
    for name in sorted((set(saved) | set(now)) - safe):
        a, b = saved.get(name, missing), now.get(name, missing)
        if a is missing and name in defaults and b == defaults[name]:
            continue  # a run from before the field existed, resumed as it ran then
        if a != b:
            out[name] = (None if a is missing else a, None if b is missing else b)
    return out


#: preset name -> field overrides
PRESETS: dict[str, dict[str, Any]] = {
    "cpu-tiny": {},
    # `mvpo-showcase` / `make run` (docs/training.md, "Showcase"): the default env's study arm
    # (docs/learning_study.md), 10 iterations on the free CPUs; the env's declaration sets its
    # split, held-out split and bundled warm start (train_defaults["cpu-showcase"])
    "cpu-showcase": {
        "run_dir": "runs/showcase",
        "policy": "encoder",
        "embedding_cache": "runs/showcase-embeddings.npz",
        "embedding_runtime": "auto",
        "num_groups": 16,
        "group_size": 8,
        "max_steps": 50,
        "history_length": 2,
        "estimator": "mvpo",
        "lr": 3e-4,
        "ppo_epochs": 2,
        "kl_coef": 0.05,
        "iterations": 10,
        "eval_episodes": 1,
        "eval_greedy": False,
        "eval_every": 0,
        "save_every": 5,
    },
    "gpu-qwen2.5-1.5b": {
        "model": "Qwen/Qwen2.5-1.5B-Instruct",
        "device": "cuda",
        "dtype": "bfloat16",
        "action_mode": "generate",
        "prompt_style": "paper",
        "history_length": 2,
        "backend": "vllm",
        "num_groups": 16,
        "group_size": 8,
        "max_steps": 50,
        "iterations": 150,
        "tasks": [],
        "ppo_epochs": 1,
        "lr": 1e-6,
        "kl_coef": 0.01,
        "entropy_coef": 0.001,
        "clip_ratio": 0.2,
        "gamma": 0.95,
        "max_new_tokens": 512,
        "invalid_penalty": 0.1,
        "minibatch_size": 256,
        "micro_batch_size": 16,
        "max_tokens_per_forward": 65536,
        "threads": 8,
        "save_every": 10,
        "record_every": 10,
        "eval_every": 10,
        "eval_split": "eval",
        "skip_zero_adv": False,
    },
}


#: the preset of the dataclass defaults (and of ``mvpo-train`` without ``--preset``)
DEFAULT_PRESET = "cpu-tiny"


def env_train_defaults(name: str, env_id: str) -> dict[str, Any]:
    """The fields (``tasks``, ``env_kwargs``) the declaration of ``env_id`` sets for the
    preset ``name`` (``{}`` for an undeclared id): e.g. the tiny CPU preset's four tasks of the
    small rooms of the default env (mvpo_envs.declaration, ``train_defaults``)."""
    declaration = get_declaration(env_id)
    if declaration is None:
        return {}
    return copy.deepcopy(dict(declaration.train_defaults.get(name, {})))


def with_preset_env_kwargs(name: str, values: dict[str, Any]) -> dict[str, Any]:
    """``values`` plus the env declaration's defaults for preset ``name`` and the run's env id
    (:func:`env_train_defaults`), for each field the values do not set."""
    env_id = values.get("env_id", TrainConfig.__dataclass_fields__["env_id"].default)
    defaults = env_train_defaults(name, env_id)
    return {**values, **{k: v for k, v in defaults.items() if k not in values}}


def default_run_dir(preset_name: str, values: dict[str, Any]) -> str:
    """``runs/<preset>/<env>-<estimator>-seed<seed>``: the run folder of a run that names
    none, one per preset, env, estimator and seed (``mvpo-train`` then ``mvpo-train
    --estimator gigpo --seed 1`` write two runs; ``mvpo-train --resume`` finds the first
    again). ``<env>`` is the env id's name, lower case, without its version
    (``mvpo/ALFWorld-v0`` -> ``alfworld``); other characters than letters, digits, ``.``,
    ``_`` and ``-`` become ``_``."""
    fields = TrainConfig.__dataclass_fields__
    env = env_folder_name(str(values.get("env_id", fields["env_id"].default)))
    estimator = str(values.get("estimator", fields["estimator"].default))
    seed = values.get("seed", fields["seed"].default)
    name = re.sub(r"[^A-Za-z0-9._-]", "_", f"{env}-{estimator}-seed{seed}")
    return f"runs/{preset_name}/{name}"


def _holds_run(path: Path) -> bool:
    return any((path / name).exists() for name in RUN_ARTIFACTS)


def numbered_run_dir(base: str, resume: bool = False, overwrite: bool = False) -> str:
    """The folder a run without ``run_dir`` uses: ``base``, or ``base-2``, ``base-3``, ...

    A fresh run takes the first of them that holds no run (an earlier run is never in the
    way: every README line can be pasted in order); ``resume`` / ``overwrite`` take the newest
    that holds one (``mvpo-train --resume`` continues the last run of these settings)."""
    taken = [base] if _holds_run(Path(base)) else []
    n = 2
    while _holds_run(Path(f"{base}-{n}")):
        taken.append(f"{base}-{n}")
        n += 1
    if resume or overwrite:
        return taken[-1] if taken else base
    return base if not taken else f"{base}-{n}"


def _with_run_dir(preset_name: str, values: dict[str, Any]) -> dict[str, Any]:
    """``values`` with :func:`numbered_run_dir` of :func:`default_run_dir` when they name no
    run folder."""
    if "run_dir" in values:
        return values
    base = default_run_dir(preset_name, values)
    run_dir = numbered_run_dir(
        base, bool(values.get("resume", False)), bool(values.get("overwrite", False))
    )
    return {**values, "run_dir": run_dir}


def preset(name: str, **overrides: Any) -> TrainConfig:
    """A config from a preset name plus field overrides (the run folder, when not given:
    :func:`default_run_dir`)."""
    if name not in PRESETS:
        raise KeyError(f"unknown preset {name!r}; available: {sorted(PRESETS)}")
    values = _with_run_dir(name, {**PRESETS[name], **overrides})
    return TrainConfig(**with_preset_env_kwargs(name, values))


def load_config(path: str | Path) -> dict[str, Any]:
    """Field values from a YAML (or JSON) file; a missing file, a folder or other non-regular
    file, invalid UTF-8, a syntax error, nesting deeper than ``MAX_DEPTH``, a duplicate key, a
    non-mapping or an unknown key is a :class:`ConfigError` naming the file (read with
    :func:`mvpo_envs.data_files.loads_yaml`)."""
    from mvpo_envs.data_files import DataFileError, loads_yaml, read_text

    path = Path(path)
    if path.exists() and not path.is_file() and not path.is_dir():  # a FIFO would block
        raise ConfigError(f"{path}: config file is not a regular file")
    try:
        data = loads_yaml(read_text(path, "config file"), path)
    except DataFileError as err:
        raise ConfigError(str(err)) from None
    except ValueError:  # Python refuses to parse an integer of more than 4300 digits
        raise ConfigError(f"{path}: an integer of more than 4300 digits in config file") from None
    data = {} if data is None else data
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: expected a mapping of config fields, got {type(data).__name__}")
    _check_keys(data, str(path))
    return data


def _check_keys(data: dict[str, Any], where: str) -> None:
    valid = {f.name for f in dataclasses.fields(TrainConfig)} | {"preset"}
    unknown = sorted(k if isinstance(k, str) else _short(k) for k in set(data) - valid)
    if unknown:
        hint = difflib.get_close_matches(unknown[0], sorted(valid), n=1)
        raise ConfigError(
            f"{where}: unknown config field {unknown[0]!r}"
            + (f" (did you mean {hint[0]!r}?)" if hint else "")
            + "; `mvpo-train --help` lists the fields"
        )


# ------------------------------------------------------------------ argparse from the dataclass


class OneLineParser(FlagSpellingParser):
    """An ``ArgumentParser`` whose errors raise :class:`ConfigError` (one line, no usage
    dump); the CLIs print it and exit with code 2. Every ``--dashed-flag`` is also accepted
    as ``--dashed_flag`` (the YAML key's spelling): ``--run_dir x`` is ``--run-dir x``
    (:class:`mvpo_envs.cli_args.FlagSpellingParser`)."""

    def error(self, message: str) -> typing.NoReturn:
        raise ConfigError(message)


def json_arg(kind: type):
    """The ``type=`` of a dict/list flag: JSON read with :func:`mvpo_envs.data_files.loads_json`
    (bounded nesting); a list may also be written ``1,8,13``. NaN, Infinity and out-of-range
    numbers parse here and are refused by :meth:`TrainConfig.__post_init__`, naming the field."""
    from mvpo_envs.data_files import DataFileError, loads_json

    def parse(text: str) -> Any:
        try:
            value = loads_json(text, "text")
        except DataFileError as err:
            if kind is list and not text.lstrip().startswith(("[", "{")):  # "1,2,3"
                return _comma_list(text)
            reason = str(err).split(": ", 1)[-1]
            raise argparse.ArgumentTypeError(
                f"expected JSON, got {_short(text)} ({reason})"
            ) from None
        if kind is list and isinstance(value, int) and not isinstance(value, bool):
            return [value]  # "--tasks 7": a list of one
        if not isinstance(value, kind):
            raise argparse.ArgumentTypeError(f"expected a JSON {kind.__name__}, got {_short(text)}")
        return value

    return parse


def _comma_list(text: str) -> list[Any]:
    """``"1,8,13"`` -> ``[1, 8, 13]`` (items that are not integers stay strings)."""
    try:
        items = [
            int(x) if x.strip().lstrip("-").isdigit() else x for x in text.split(",") if x.strip()
        ]
    except ValueError:  # more than 4300 digits
        raise argparse.ArgumentTypeError(
            f"an integer of more than 4300 digits in {_short(text)}"
        ) from None
    if not items:  # "," or " ": not a silent "no list given"
        raise argparse.ArgumentTypeError(f"expected a list such as 1,8,13, got {text!r}")
    return items


def build_parser(
    prog: str = "mvpo-train", description: str | None = None
) -> argparse.ArgumentParser:
    """``argparse`` flags for every :class:`TrainConfig` field (defaults are resolved later);
    enum-like fields get ``choices`` from their ``Literal``."""
    p = OneLineParser(
        prog=prog,
        description=description or __doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument(
        "--preset",
        default=None,
        choices=sorted(PRESETS),
        help="start from a preset (default cpu-tiny)",
    )
    p.add_argument(
        "--config", default=None, help="YAML file of config fields (applied after the preset)"
    )
    hints = _hints()
    defaults = TrainConfig()
    for f in dataclasses.fields(TrainConfig):
        kind = _base_type(hints[f.name])
        flag = "--" + f.name.replace("_", "-")
        extra = _bounds_text(f.metadata)
        help_text = f"{f.metadata.get('help', '')} (default: {getattr(defaults, f.name)!r}"
        help_text += f"; {extra})" if extra else ")"
        if kind is bool:
            p.add_argument(
                flag,
                dest=f.name,
                action=argparse.BooleanOptionalAction,
                default=None,
                help=help_text,
            )
        elif kind in (dict, list):
            p.add_argument(flag, dest=f.name, type=json_arg(kind), default=None, help=help_text)
        else:
            aliases = FIELD_ALIASES.get(f.name)
            p.add_argument(
                flag,
                dest=f.name,
                type=(lambda v, a=aliases: a.get(v, v)) if aliases else kind,
                choices=choices_of(f.name),
                default=None,
                help=help_text,
            )
    return p


#: environment variable that shrinks every run to a smoke test (``MVPO_SHRINK=1``): README
#: lines pasted in order in seconds (tests/test_readme_in_order.py); never set by mvpo itself
SHRINK_ENV = "MVPO_SHRINK"
#: the sizes ``MVPO_SHRINK=1`` sets over every other layer (``mvpo-eval``: one episode of two
#: tasks, 3 steps)
SHRUNK: dict[str, Any] = {"iterations": 1, "num_groups": 2, "group_size": 2, "max_steps": 3,
                          "eval_max_tasks": 2, "eval_episodes": 1}  # fmt: skip


def shrunk() -> bool:
    """Whether ``MVPO_SHRINK`` is set to a non-empty value other than ``0`` (said on stderr
    by each command that applies it, so it is never silent)."""
    import os

    return os.environ.get(SHRINK_ENV, "0") not in ("", "0")


def config_from_args(args: argparse.Namespace) -> TrainConfig:
    """Layer defaults < preset < YAML < flags (< :data:`SHRUNK` under ``MVPO_SHRINK=1``) into
    a :class:`TrainConfig`."""
    values: dict[str, Any] = {}
    file_values: dict[str, Any] = load_config(args.config) if getattr(args, "config", None) else {}
    preset_name = getattr(args, "preset", None) or file_values.pop("preset", None) or "cpu-tiny"
    if preset_name not in PRESETS:
        raise ConfigError(
            f"preset: unknown preset {preset_name!r}; allowed: {', '.join(sorted(PRESETS))}"
        )
    values.update(PRESETS[preset_name])
    values.update(file_values)
    for f in dataclasses.fields(TrainConfig):
        v = getattr(args, f.name, None)
        if v is not None:
            values[f.name] = v
    if shrunk():
        import sys

        values.update(SHRUNK)
        print(f"{SHRINK_ENV} is set: sizes shrunk to {SHRUNK}", file=sys.stderr, flush=True)
    values = _with_run_dir(preset_name, values)
    return TrainConfig(**with_preset_env_kwargs(preset_name, values))
