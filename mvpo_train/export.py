"""``mvpo-export``: what a run played, as Hugging Face ``datasets`` tables (docs/inspect.md,
"Export").

``mvpo-export RUN [--iterations 1,5-9] [--estimators grpo,gigpo] --format
datasets|parquet|jsonl [--out OUT]`` reads the batch records of a run folder
(:mod:`mvpo_train.records`) and writes two tables:

* **steps**, one row per environment step: ``iteration``, ``episode`` (``"<iteration>-<traj>"``),
  ``group``, ``traj``, ``t``, ``task_id``, ``task_index``, ``task_type``, ``prompt`` (the text
  the policy read), ``admissible_actions``, ``action`` (canonical), ``reward`` (with the
  invalid-action penalty), ``env_reward``, ``terminated``, ``truncated``, ``success``,
  ``anchor``, ``signature``, ``milestones``, ``invalid_action``, ``format_ok``,
  ``observation`` (when recorded; cut as recorded), ``estimator`` and ``advantage`` (the trained
  estimator's, as recorded), and ``advantage_<name>`` for each ``--estimators`` name, recomputed
  from the record (the trained estimator with its recorded config and pre-call state, any other
  with its defaults and a fresh state);
* **episodes**, one row per episode: ``iteration``, ``episode``, ``group``, ``traj``,
  ``task_id``, ``task_index``, ``task_type``, ``length``, ``return`` (sum of ``reward``),
  ``env_return``, ``success``, ``terminated``, ``truncated``.

``datasets`` writes ``OUT`` with :meth:`datasets.DatasetDict.save_to_disk` (splits ``steps`` and
``episodes``: ``datasets.load_from_disk(OUT)["steps"]``); ``parquet`` and ``jsonl`` write
``OUT/steps.*`` and ``OUT/episodes.*`` with the library's own writers. Records written before a
field was recorded (``prompt``, ``admissible_actions``, ``task_id``, ``task_index``) export
without it: the column is left out (or null on those rows when other records have it), and one
line on stderr names the fields and the iterations.

``--format verl`` writes verl's RL dataset rows for an env and split (docs/integrations.md,
"verl"): one row per task, ``OUT/<split>.parquet``, each naming its episode in
``extra_info["mvpo_env"]`` for the ``mvpo_env`` agent loop
(:mod:`mvpo_train.integrations.verl_agent_loop`), with ``prompt`` the first observation rendered
by the prompt template. The env comes from ``--env-id`` / ``--env-kwargs`` or, given a RUN,
from the run's ``config.yaml``.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from mvpo_train.errors import ConfigError
from mvpo_train.records import BatchRecord, RecordError, find_records, read_batch_record

__all__ = [
    "FORMATS",
    "RECORDED_FIELDS",
    "ExportResult",
    "episode_columns",
    "export_run",
    "main",
    "parse_iterations",
    "step_columns",
    "verl_rows",
    "write_verl",
]

FORMATS = ("datasets", "parquet", "jsonl", "verl")
#: extras the collector records for the export (older records lack them)
RECORDED_FIELDS = ("prompt", "admissible_actions", "task_id", "task_index")
#: the verl agent loop's name and its dataset column (mvpo_train.integrations.verl_agent_loop)
VERL_AGENT = "mvpo_env"
#: step-table columns copied from the record's extras: column -> (extra, kind)
_EXTRA_COLUMNS = {
    "task_id": ("task_id", "string"),
    "task_index": ("task_index", "int64"),
    "task_type": ("task_type", "string"),
    "prompt": ("prompt", "string"),
    "admissible_actions": ("admissible_actions", "list"),
    "env_reward": ("env_reward", "float64"),
    "invalid_action": ("invalid_action", "bool"),
    "format_ok": ("format_ok", "bool"),
}
_EPISODE_EXTRAS = ("task_id", "task_index", "task_type")


# -------------------------------------------------------------------- selection


def parse_iterations(spec: str | None, available: Sequence[int]) -> list[int]:
    """``"3"``, ``"1,5-9"``, ``"last"`` or None (every recorded iteration) -> the recorded
    iterations asked for; one :class:`ConfigError` line for a bad spec or a missing record."""
    if not available:
        raise ConfigError("no batch records to export (record_every=0?)")
    if spec is None or spec.strip() == "all":
        return list(available)
    if spec.strip() == "last":
        return [available[-1]]
    wanted: list[int] = []
    for part in (p.strip() for p in spec.split(",")):
        try:
            if "-" in part:
                lo, hi = (int(x) for x in part.split("-", 1))
                if hi < lo:
                    raise ValueError
                wanted += range(lo, hi + 1)
            else:
                wanted.append(int(part))
        except ValueError:
            raise ConfigError(
                f"--iterations: {part!r} is not N or A-B (e.g. 1,5-9, 'last' or 'all')"
            ) from None
    have = set(available)
    missing = [k for k in wanted if k not in have]
    if missing:
        raise ConfigError(
            f"--iterations: no record of iteration {missing[0]}; recorded: {_ranges(available)}"
        )
    return sorted(set(wanted))


def _ranges(values: Iterable[int]) -> str:
    """``1-3,7``: sorted integers as ranges."""
    out: list[str] = []
    vals = sorted(values)
    k = 0
    while k < len(vals):
        j = k
        while j + 1 < len(vals) and vals[j + 1] == vals[j] + 1:
            j += 1
        out.append(str(vals[k]) if j == k else f"{vals[k]}-{vals[j]}")
        k = j + 1
    return ",".join(out)


# -------------------------------------------------------------------- rows


def step_columns(
    record: BatchRecord, estimators: Sequence[str] = ()
) -> tuple[dict[str, list], list[str]]:
    """The step table of one record (column -> values) and the recorded fields it lacks."""
    b = record.batch
    n = len(b)
    cols: dict[str, list] = {
        "iteration": [record.iteration] * n,
        "episode": [f"{record.iteration}-{int(x)}" for x in b.traj.tolist()],
        "group": b.group.tolist(),
        "traj": b.traj.tolist(),
        "t": b.t.tolist(),
    }
    missing = [f for f in RECORDED_FIELDS if f not in record.extras]
    for name, (extra, kind) in _EXTRA_COLUMNS.items():
        if extra in record.extras:
            cols[name] = _column(record.extras[extra], kind)
    cols.update(
        action=b.action.tolist(),
        reward=b.reward.tolist(),
        terminated=b.terminated.tolist(),
        truncated=b.truncated.tolist(),
        success=b.success.tolist(),
        anchor=b.anchor.tolist(),
        signature=b.signature.tolist(),
        milestones=[list(m) for m in b.milestones.tolist()],
    )
    if record.observations is not None:
        cols["observation"] = record.observations.tolist()
    cols["estimator"] = [record.estimator_name] * n
    cols["advantage"] = None if record.advantages is None else record.advantages.tolist()
    if cols["advantage"] is None:
        cols["advantage"] = [None] * n
    for name in estimators:
        adv, _ = record.make_estimator(name)(b)
        cols[f"advantage_{name}"] = np.asarray(adv, dtype=np.float64).tolist()
    return cols, missing


def episode_columns(record: BatchRecord) -> dict[str, list]:
    """The episode table of one record: one row per trajectory, in ``traj`` order."""
    b = record.batch
    first = b.traj_rows  # one row per compact trajectory (ordered by traj id)
    last_rows = np.flatnonzero(b.is_last)
    last = np.empty(b.n_traj, dtype=np.int64)
    last[b.traj_index[last_rows]] = last_rows
    cols: dict[str, list] = {
        "iteration": [record.iteration] * b.n_traj,
        "episode": [f"{record.iteration}-{int(b.traj[r])}" for r in first.tolist()],
        "group": b.group[first].tolist(),
        "traj": b.traj[first].tolist(),
    }
    for name in _EPISODE_EXTRAS:
        if name in record.extras:
            extra, kind = _EXTRA_COLUMNS[name]
            cols[name] = _column(np.asarray(record.extras[extra], dtype=object)[first], kind)
    cols["length"] = b.traj_length.tolist()
    cols["return"] = b.traj_return.tolist()
    if "env_reward" in record.extras:
        env_r = np.asarray(record.extras["env_reward"], dtype=np.float64)
        cols["env_return"] = np.bincount(b.traj_index, env_r, b.n_traj).tolist()
    cols["success"] = b.traj_success.tolist()
    cols["terminated"] = b.terminated[last].tolist()
    cols["truncated"] = b.truncated[last].tolist()
    return cols


def _column(values: Any, kind: str) -> list:
    vals = list(values)
    if kind == "int64":
        return [int(v) for v in vals]
    if kind == "float64":
        return [float(v) for v in vals]
    if kind == "bool":
        return [bool(v) for v in vals]
    if kind == "list":
        return [[str(x) for x in v] for v in vals]
    return [str(v) for v in vals]


def _features(columns: Iterable[str]) -> Any:
    """Explicit ``datasets`` types (a column null on some rows keeps its type)."""
    import datasets as hf

    kinds = {name: kind for name, (_, kind) in _EXTRA_COLUMNS.items()}
    kinds.update(
        iteration="int64", episode="string", group="int64", traj="int64", t="int64",
        action="string", reward="float64", terminated="bool", truncated="bool",
        success="bool", anchor="string", signature="string", milestones="list",
        observation="string", estimator="string", advantage="float64", length="int64",
        env_return="float64", **{"return": "float64"},
    )  # fmt: skip
    out = {}
    for name in columns:
        kind = kinds.get(name, "float64")  # advantage_<name>
        out[name] = hf.List(hf.Value("string")) if kind == "list" else hf.Value(kind)
    return hf.Features(out)


def _table(parts: list[dict[str, list]]) -> Any:
    """One ``datasets.Dataset`` from per-record column dicts (absent columns: null rows)."""
    import datasets as hf

    names: list[str] = []
    for part in parts:
        names += [c for c in part if c not in names]
    data: dict[str, list] = {c: [] for c in names}
    for part in parts:
        n = len(next(iter(part.values()))) if part else 0
        for c in names:
            data[c] += part.get(c, [None] * n)
    return hf.Dataset.from_dict(data, features=_features(names))


# -------------------------------------------------------------------- export


@dataclass
class ExportResult:
    """What :func:`export_run` wrote."""

    out: Path
    iterations: list[int]
    steps: int
    episodes: int
    files: list[Path] = field(default_factory=list)
    missing: dict[str, list[int]] = field(default_factory=dict)

    def missing_line(self) -> str | None:
        """One line naming the recorded fields some iterations lack (None when none do)."""
        if not self.missing:
            return None
        by_iterations: dict[str, list[str]] = {}
        for name, its in self.missing.items():
            by_iterations.setdefault(_ranges(its), []).append(name)
        parts = [f"{', '.join(names)} (iterations {its})" for its, names in by_iterations.items()]
        return (
            "records written before these fields were recorded export without them: "
            + "; ".join(parts)
        )


def _prepare_out(out: Path, overwrite: bool) -> None:
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        if not overwrite:
            raise ConfigError(f"--out: {out} exists and is not empty (add --overwrite)")
        if out.is_dir():
            shutil.rmtree(out)
        else:
            out.unlink()
    out.mkdir(parents=True, exist_ok=True)


def export_run(
    run_dir: str | Path,
    out: str | Path,
    fmt: str = "datasets",
    *,
    iterations: str | None = None,
    estimators: Sequence[str] = (),
    overwrite: bool = False,
    progress: bool = False,
) -> ExportResult:
    """Export the batch records of ``run_dir`` to ``out`` (module docstring); ``progress``:
    a bar over the records read."""
    from tqdm.auto import tqdm

    if fmt not in FORMATS or fmt == "verl":
        raise ConfigError(
            f"--format: {fmt!r} exports records; use one of datasets, parquet, jsonl"
            + (" (verl rows are written by write_verl)" if fmt == "verl" else "")
        )
    run = Path(run_dir)
    if not run.is_dir():
        raise ConfigError(f"{run}: no such run folder")
    found = find_records(run)
    if not found:
        raise ConfigError(
            f"{run}: no batch records in {run / 'records'} (the run was made with "
            "record_every=0, or is not a run folder)"
        )
    chosen = parse_iterations(iterations, list(found))
    steps: list[dict[str, list]] = []
    episodes: list[dict[str, list]] = []
    missing: dict[str, list[int]] = {}
    for k in tqdm(chosen, desc="records", unit="iteration", disable=not progress):
        record = read_batch_record(found[k])
        cols, lacks = step_columns(record, estimators)
        for name in lacks:
            missing.setdefault(name, []).append(k)
        steps.append(cols)
        episodes.append(episode_columns(record))
    out = Path(out)
    _prepare_out(out, overwrite)
    step_ds, episode_ds = _table(steps), _table(episodes)
    files: list[Path] = []
    if fmt == "datasets":
        import datasets as hf

        hf.DatasetDict({"steps": step_ds, "episodes": episode_ds}).save_to_disk(str(out))
        files.append(out)
    else:
        for name, ds in (("steps", step_ds), ("episodes", episode_ds)):
            path = out / f"{name}.{fmt}"
            if fmt == "parquet":
                ds.to_parquet(str(path))
            else:
                ds.to_json(str(path), lines=True, force_ascii=False)
            files.append(path)
    return ExportResult(out, chosen, len(step_ds), len(episode_ds), files, missing)


# -------------------------------------------------------------------- verl


def verl_rows(
    env_id: str,
    split: str | None = None,
    env_kwargs: Mapping[str, Any] | None = None,
    template: str = "paper",
    max_tasks: int | None = None,
    progress: bool = True,
) -> list[dict[str, Any]]:
    """verl's RL dataset rows for the tasks of one split of ``env_id`` (module docstring).

    Row ``i`` plays task ``i`` (reset seed ``i``, as every mvpo env picks its task from the
    seed). ``split`` is passed to the env as ``split=`` (None: the env's default split, named
    ``"default"`` in ``extra_info``); ``template`` is the prompt style the agent loop renders
    with; ``max_tasks`` keeps the first N tasks.
    """
    import gymnasium as gym
    from tqdm.auto import tqdm

    import mvpo_envs  # noqa: F401  (registers the mvpo/* ids)
    from mvpo_train.prompts import get_template

    kwargs = dict(env_kwargs or {})
    if split is not None:
        kwargs["split"] = split
    prompt = get_template(env_id, template)
    try:
        env = gym.make(env_id, **kwargs)
    except (gym.error.Error, TypeError, ValueError, FileNotFoundError) as err:
        raise ConfigError(f"--env-id {env_id} with env kwargs {kwargs}: {err}") from None
    try:
        num_tasks = len(env.unwrapped.task_ids)
        n = num_tasks if not max_tasks else min(max_tasks, num_tasks)
        rows: list[dict[str, Any]] = []
        for i in tqdm(range(n), desc=f"verl rows of {env_id}", disable=not progress):
            obs, info = env.reset(seed=i)
            task = str(info.get("task", ""))
            admissible = list(info.get("admissible_actions", []))
            spec: dict[str, Any] = {"env_id": env_id, "seed": i, "template": template}
            if kwargs:  # an empty dict is no parquet column
                spec["env_kwargs"] = kwargs
            rows.append(
                {
                    "data_source": env_id,
                    "agent_name": VERL_AGENT,
                    "prompt": [
                        {"role": "user", "content": prompt.render(task, obs, admissible, [], 0)}
                    ],
                    "ability": "agent",
                    "reward_model": {"style": "env", "ground_truth": str(info.get("task_id", ""))},
                    "extra_info": {
                        "split": split or "default",
                        "index": i,
                        "task_id": str(info.get("task_id", "")),
                        VERL_AGENT: spec,
                    },
                }
            )
    finally:
        env.close()
    return rows


def write_verl(
    out: str | Path,
    env_id: str,
    split: str | None = None,
    env_kwargs: Mapping[str, Any] | None = None,
    template: str = "paper",
    max_tasks: int | None = None,
    overwrite: bool = False,
    progress: bool = True,
) -> Path:
    """:func:`verl_rows` written to ``out/<split>.parquet`` with ``datasets``; its path (the
    splits of an env may share ``out``; an existing file of the split needs ``overwrite``)."""
    import datasets as hf

    out = Path(out)
    path = out / f"{split or 'default'}.parquet"
    if path.exists() and not overwrite:  # other splits may share the folder
        raise ConfigError(f"--out: {path} exists (add --overwrite)")
    rows = verl_rows(env_id, split, env_kwargs, template, max_tasks, progress)
    out.mkdir(parents=True, exist_ok=True)
    hf.Dataset.from_list(rows).to_parquet(str(path))
    return path


def _run_env(run: Path) -> tuple[str, dict[str, Any], str]:
    """The env id, env kwargs and prompt style of a run folder's ``config.yaml``."""
    from mvpo_train.config import load_config

    path = run / "config.yaml"
    if not path.is_file():
        raise ConfigError(f"{run}: no config.yaml (not a run folder); give --env-id instead")
    cfg = load_config(path)
    return str(cfg["env_id"]), dict(cfg.get("env_kwargs") or {}), str(cfg.get("prompt_style"))


# -------------------------------------------------------------------- CLI


def _parser() -> argparse.ArgumentParser:
    from mvpo_envs.cli_args import int_at_least
    from mvpo_train.config import OneLineParser  # errors are one line; --run_dir is --run-dir

    p = OneLineParser(
        prog="mvpo-export",
        description="Export what a run played (its batch records) as Hugging Face datasets, "
        "parquet or JSON lines, or write verl's dataset rows for an env and split "
        "(docs/inspect.md, 'Export'; docs/integrations.md, 'verl').",
    )
    p.add_argument("run", nargs="?", help="run folder (holds records/ and config.yaml)")
    p.add_argument("--format", choices=FORMATS, default="datasets", help="output format")
    p.add_argument(
        "--out", help="output folder (default: RUN/export-<format>, or ./verl-<env> for verl)"
    )
    p.add_argument("--iterations", help="recorded iterations: N, A-B, lists (1,5-9), last, all")
    p.add_argument(
        "--estimators",
        help="also write advantage_<name> recomputed from the records, e.g. grpo,gigpo or all",
    )
    p.add_argument("--overwrite", action="store_true", help="replace a non-empty --out")
    g = p.add_argument_group("verl rows (--format verl)")
    g.add_argument("--env-id", help="env id (default: the run's)")
    g.add_argument("--split", help="the env's split= (default: the run's env_kwargs' split)")
    g.add_argument("--env-kwargs", help="JSON env kwargs (default: the run's)")
    g.add_argument(
        "--template",
        help="prompt style the agent loop renders (default: paper; seed, its former name, reads as it)",
    )
    g.add_argument("--max-tasks", type=int_at_least(1), help="the first N tasks only")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    return p


def _main_verl(args: argparse.Namespace) -> int:
    env_id, kwargs, template = args.env_id, {}, "paper"
    if args.run:
        run_env, kwargs, style = _run_env(Path(args.run))
        env_id = env_id or run_env
        template = style or template
    if not env_id:
        raise ConfigError("--format verl: give a RUN folder or --env-id")
    if args.env_kwargs:
        try:
            kwargs = json.loads(args.env_kwargs)
        except json.JSONDecodeError as err:
            raise ConfigError(f"--env-kwargs: not JSON ({err})") from None
        if not isinstance(kwargs, dict):
            raise ConfigError("--env-kwargs: expected a JSON object")
    split = args.split or kwargs.pop("split", None)
    kwargs.pop("split", None)
    out = Path(args.out) if args.out else Path(f"verl-{env_id.replace('/', '-')}")
    path = write_verl(
        out, env_id, split, kwargs, args.template or template, args.max_tasks, args.overwrite,
        progress=not args.no_progress,
    )  # fmt: skip
    print(f"wrote {path}")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``mvpo-export``."""
    try:
        args = _parser().parse_args(argv)
    except ConfigError as err:
        print(f"mvpo-export: {err}", file=sys.stderr)
        return 2
    if args.no_progress:
        import datasets as hf

        hf.disable_progress_bars()
    try:
        if args.format == "verl":
            return _main_verl(args)
        if not args.run:
            raise ConfigError(f"--format {args.format}: give the run folder to export")
        from mvpo_train.inspect.data import parse_estimators

        names: list[str] = []
        if args.estimators:
            names = parse_estimators(args.estimators, None)
        out = Path(args.out) if args.out else Path(args.run) / f"export-{args.format}"
        result = export_run(
            args.run, out, args.format, iterations=args.iterations, estimators=names,
            overwrite=args.overwrite, progress=not args.no_progress,
        )  # fmt: skip
        line = result.missing_line()
        if line:
            print(f"mvpo-export: {line}", file=sys.stderr)
        print(
            f"wrote {result.steps} steps and {result.episodes} episodes of "
            f"{len(result.iterations)} iterations to {result.out}"
        )
    except (ConfigError, RecordError, ValueError, KeyError) as err:
        msg = err.args[0] if isinstance(err, KeyError) and err.args else err
        print(f"mvpo-export: {msg}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
