"""Offline generator of ALFWorld games, in ALFWorld's own on-disk format.

``mvpo-alfworld-generate --out DIR --split-sizes train=36,eval=18 --preset mini --seed 0``
writes ``DIR/<split>/<task_type>-<Object>-None-<Recep>-<scene>/trial_G<seed>/`` with

* ``game.tw-pddl``: ``pddl_domain`` (the wheel's ``alfred.pddl``), ``grammar`` (the wheel's
  ``alfred.twl2`` with the task text filled in by ALFWorld's ``add_task_to_grammar``),
  ``pddl_problem`` (an ALFRED scene, see :mod:`gen_problem`), ``solvable: true`` and
  ``walkthrough``;
* ``traj_data.json``: ALFRED-style metadata (``task_type``, ``pddl_params``, ``scene``,
  ``task_id``, ``turk_annotations`` with the templated task text) plus a ``mvpo_generator``
  block (generator version, seeds, preset and knobs),

and records every game (relative path, task type, walkthrough length, SHA-256 of both files)
in a ``MANIFEST.json``. Each walkthrough is constructed, then played on an ALFWorld engine
(:mod:`gen_engine`): the native ``fast`` engine by default, ALFWorld's own ``pddl`` engine
on request and for the presets whose engine planner must also find a plan. A game that is too
long or fails is drawn again from the next seed. Game ``i`` of a split depends only on (seed,
split, ``i``): same seed and knobs give byte-identical files, for any worker count, any
verifying engine and any first index (docs/alfworld_generator.md, "Verification and speed").
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import functools
import hashlib
import json
import multiprocessing
import os
import random
import shlex
import shutil
import statistics
import sys
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import alfworld
from alfworld.agents.utils.misc import add_task_to_grammar
from tqdm import tqdm

from mvpo_envs.alfworld.game_file import TASK_TYPES
from mvpo_envs.alfworld.gen_alfworld import (
    ALFWORLD_SPLIT_SIZES,
    SPLIT_POOLS,
    RoomRangeError,
    sample_room_problem,
    task_sequence,
)
from mvpo_envs.alfworld.gen_engine import (
    VERIFY_ENGINES,
    Engine,  # noqa: F401  (re-exported: gen.Engine is the reference engine)
    FastVerifier,  # noqa: F401
    PlayReport,
    VerificationError,
    Verifier,
    make_verifier,
)
from mvpo_envs.alfworld.gen_problem import Knobs, Problem, sample_problem
from mvpo_envs.alfworld.gen_scene import scene_numbers
from mvpo_envs.alfworld.provenance import alfworld_version
from mvpo_envs.cli_args import FlagSpellingParser

GENERATOR = "mvpo-alfworld-generate"
GENERATOR_VERSION = "1.0.0"
GAME_FILE = "game.tw-pddl"
TRAJ_FILE = "traj_data.json"
MANIFEST_FILE = "MANIFEST.json"
PRESETS: dict[str, Knobs] = {
    # a handful of receptacles, few distractors: a short episode can win (<= 8 commands)
    "mini": Knobs(
        receptacles=(3, 5),
        distractors=(1, 3),
        openable_share=0.25,
        extra_targets=(0, 0),
        max_walkthrough=8,
    ),
    # close to a real ALFWorld scene: (nearly) every posed receptacle, many distractors
    "standard": Knobs(
        receptacles=(12, 40),
        distractors=(8, 20),
        openable_share=None,
        extra_targets=(0, 2),
        max_walkthrough=30,
    ),
    # ALFWorld scale: the whole room, every object type in 1-3 copies, ALFWorld's task mix and
    # splits (see gen_alfworld); the engine verifies the walkthrough, no planner needed
    "alfworld": Knobs(
        receptacles=(0, 0),
        distractors=(0, 0),
        openable_share=None,
        extra_targets=(0, 0),
        max_walkthrough=30,
        world="room",
        planner_check=False,
    ),
}
#: the preset whose games keep ALFWorld's splits (train / valid_seen / valid_unseen)
ALFWORLD_PRESET = "alfworld"
DEFAULT_SPLIT_SIZES = {"train": 36, "eval": 18}
MAX_ATTEMPTS = 200


# --------------------------------------------------------------------------------------
# Seeds, files and text


def game_seed(base_seed: int, split: str, index: int, attempt: int) -> int:
    """Seed of one draw: a stable 52-bit hash of (base seed, split, game index, attempt).

    52 bits keep it exact in any JSON reader (IEEE doubles) and unique enough for trial ids.
    """
    key = f"{GENERATOR}:{base_seed}:{split}:{index}:{attempt}".encode()
    return int(hashlib.sha256(key).hexdigest()[:13], 16)


@functools.cache
def wheel_logic() -> tuple[str, str]:
    """``alfred.pddl`` and ``alfred.twl2`` as shipped in the installed alfworld wheel (read once)."""
    folder = Path(alfworld.__file__).resolve().parent / "data"
    return (
        (folder / "alfred.pddl").read_text(encoding="utf-8"),
        (folder / "alfred.twl2").read_text(encoding="utf-8"),
    )


@contextlib.contextmanager
def _seeded_global_random(seed: int) -> Iterator[None]:
    """ALFWorld's template choice uses the module-level ``random``; seed it, then restore it."""
    saved = random.getstate()
    random.seed(seed)
    try:
        yield
    finally:
        random.setstate(saved)


def fill_task(grammar: str, traj_data: dict, seed: int) -> tuple[str, str]:
    """Grammar with the task text, by ALFWorld's ``add_task_to_grammar``; and that text."""
    marker = "UNKNOWN GOAL"
    start = grammar.index(marker)
    tail = len(grammar) - start - len(marker)
    with _seeded_global_random(seed):
        filled = add_task_to_grammar(grammar, traj_data, 0.0, rng=random.Random(seed))
    return filled, filled[start : len(filled) - tail]


def sha256_file(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _write(path: Path, text: str) -> str:
    """Write ``text`` (UTF-8, ``\\n`` newlines); return the SHA-256 of the bytes written."""
    data = text.encode("utf-8")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return hashlib.sha256(data).hexdigest()


# --------------------------------------------------------------------------------------
# One game


@dataclass
class Draw:
    """A sampled game before verification."""

    problem: Problem
    trial_id: str
    game: dict
    traj: dict


def make_draw(problem: Problem, seed: int, logic: tuple[str, str], meta: dict) -> Draw:
    """The two files of a game (walkthrough still empty) for a sampled problem."""
    trial_id = f"trial_G{seed:013x}"
    goal = problem.goal
    x, z, rotation = problem.agent_pose
    traj = {
        "pddl_params": goal.pddl_params(),
        "scene": {
            "floor_plan": problem.scene.floor_plan,
            "init_action": {
                "action": "TeleportFull",
                "horizon": 30,
                "rotateOnTeleport": True,
                "rotation": rotation,
                "x": x,
                "z": z,
            },
            "random_seed": seed,
            "scene_num": problem.scene.number,
        },
        "task_id": trial_id,
        "task_type": goal.task_type,
        "turk_annotations": {"anns": []},
        "mvpo_generator": meta,
    }
    grammar, text = fill_task(logic[1], traj, seed)
    traj["turk_annotations"]["anns"].append({"task_desc": text, "high_descs": [], "votes": []})
    game = {
        "pddl_domain": logic[0],
        "grammar": grammar,
        "pddl_problem": problem.pddl(f"plan_{trial_id}"),
        "solvable": True,
        "walkthrough": [],
    }
    return Draw(problem, trial_id, game, traj)


def verify_draw(engine: Verifier, draw: Draw, ask_planner: bool = True) -> PlayReport:
    """Play the constructed walkthrough on the engine; the planner must find a plan too."""
    steps = draw.problem.plan
    report = engine.play(draw.game, lambda names: [s.render(names) for s in steps], ask_planner)
    if ask_planner and not report.planner_commands:
        raise VerificationError("the engine's planner finds no plan")
    return report


# --------------------------------------------------------------------------------------
# A split


@dataclass
class SplitResult:
    """What was written for one split, and what it took."""

    games: list[dict] = field(default_factory=list)
    too_long: int = 0
    failed: list[str] = field(default_factory=list)
    timings: list[tuple[float, float, float]] = field(default_factory=list)  # load, reset, steps
    planner_lengths: list[int] = field(default_factory=list)  # the engine planner's plans


@dataclass(frozen=True)
class SplitConfig:
    """Everything that fixes the games of one split."""

    split: str
    preset: str
    knobs: Knobs
    seed: int
    task_types: tuple[str, ...]
    scene_pool: str
    mix: str = "cycle"  # "cycle": game i has task_types[i % n]; "alfworld": ALFWorld's mix

    def task_type(self, index: int) -> str:
        if self.mix == "alfworld":
            return task_sequence(self.split, self.task_types, index + 1)[index]
        return self.task_types[index % len(self.task_types)]

    def meta(self, index: int, attempt: int, gseed: int) -> dict:
        """The ``mvpo_generator`` block of a game's traj_data.json."""
        return {
            "generator": GENERATOR,
            "version": GENERATOR_VERSION,
            "alfworld_version": alfworld_version(),
            "preset": self.preset,
            "knobs": self.knobs.as_meta(),
            "seed": self.seed,
            "split": self.split,
            "index": index,
            "attempt": attempt,
            "game_seed": gseed,
            "scene_pool": self.scene_pool,
            "walkthrough_source": "constructed",
        }


def draw_game(
    cfg: SplitConfig,
    index: int,
    engine: Verifier,
    result: SplitResult,
    task_type: str | None = None,
) -> tuple[Draw, PlayReport]:
    """Draw game ``index`` from seed after seed until one is short enough and verified."""
    task_type = task_type or cfg.task_type(index)
    pool = scene_numbers(cfg.scene_pool)
    logic = wheel_logic()
    for attempt in range(MAX_ATTEMPTS):
        gseed = game_seed(cfg.seed, cfg.split, index, attempt)
        rng = random.Random(gseed)
        if cfg.knobs.world == "room":
            problem = sample_room_problem(rng, task_type, pool)
        else:
            problem = sample_problem(rng, task_type, pool, cfg.knobs)
        if len(problem.plan) > cfg.knobs.max_walkthrough:
            result.too_long += 1
            continue
        draw = make_draw(problem, gseed, logic, cfg.meta(index, attempt, gseed))
        try:
            return draw, verify_draw(engine, draw, cfg.knobs.planner_check)
        except VerificationError as err:
            result.failed.append(f"{cfg.split}[{index}] attempt {attempt}: {err}")
    raise RuntimeError(f"{cfg.split}[{index}] ({task_type}): no valid game in {MAX_ATTEMPTS} draws")


def write_game(split_dir: Path, draw: Draw, report: PlayReport) -> dict:
    """Write the verified game's two files; return its manifest record."""
    draw.game["walkthrough"] = report.commands
    game_dir = split_dir / draw.problem.goal.folder_name(draw.problem.scene.number) / draw.trial_id
    game_sha = _write(game_dir / GAME_FILE, json.dumps(draw.game))
    traj_sha = _write(game_dir / TRAJ_FILE, json.dumps(draw.traj, indent=2, sort_keys=True) + "\n")
    return {
        "relpath": game_dir.relative_to(split_dir).as_posix(),
        "task_type": draw.problem.goal.task_type,
        "scene": draw.problem.scene.number,
        "walkthrough_len": len(report.commands),
        "sha256": {GAME_FILE: game_sha, TRAJ_FILE: traj_sha},
    }


@dataclass
class GameOutcome:
    """One written game: its manifest record, its redraws and the engine's timings."""

    index: int
    record: dict
    too_long: int
    failed: list[str]
    timing: tuple[float, float, float]  # load, reset, steps
    planner_length: int


def make_game(
    split_dir: Path, cfg: SplitConfig, index: int, task_type: str, engine: Verifier
) -> GameOutcome:
    """Draw, verify and write game ``index`` of the split (index-addressable: nothing else
    of the split is read or needed)."""
    part = SplitResult()
    draw, report = draw_game(cfg, index, engine, part, task_type)
    record = write_game(split_dir, draw, report)
    return GameOutcome(
        index,
        record,
        part.too_long,
        part.failed,
        (report.load_s, report.reset_s, report.steps_s),
        len(report.planner_commands or []),
    )


_WORKER_ENGINES: dict[tuple[str, bool], Verifier] = {}


def _engine_for(kind: str, planner: bool) -> Verifier:
    """One engine per (kind, planner) and process, reused from game to game."""
    key = (kind, planner)
    if key not in _WORKER_ENGINES:
        _WORKER_ENGINES[key] = make_verifier(kind, planner)
    return _WORKER_ENGINES[key]


def _worker_game(job: tuple[Path, SplitConfig, int, str, str]) -> GameOutcome:
    """Make one game in a worker process: it writes the files itself and sends back the
    small record (the parent never receives the problem or the game text)."""
    split_dir, cfg, index, task_type, kind = job
    return make_game(split_dir, cfg, index, task_type, _engine_for(kind, cfg.knobs.planner_check))


def resolve_verify_engine(kind: str, knobs: Knobs) -> str:
    """``auto`` -> ``fast``, or ``pddl`` for the presets whose engine planner must find a plan
    (the fast engine has none); a clear error for a kind that cannot verify these knobs."""
    if kind == "auto":
        return "pddl" if knobs.planner_check else "fast"
    if kind not in VERIFY_ENGINES:
        raise ValueError(f"unknown verify engine {kind!r}; use auto or one of {VERIFY_ENGINES}")
    if kind == "fast" and knobs.planner_check:
        raise ValueError(
            "--verify-engine fast: this preset also asks the engine's planner for a plan, and "
            "the fast engine has no planner; use --verify-engine pddl (or auto)"
        )
    return kind


def split_task_types(cfg: SplitConfig, start: int, size: int) -> list[str]:
    """Task types of games ``start .. start + size - 1`` (the same as in any longer split)."""
    if cfg.mix == "alfworld":
        return task_sequence(cfg.split, cfg.task_types, start + size)[start:]
    return [cfg.task_type(i) for i in range(start, start + size)]


def generate_split(
    split_dir: Path,
    cfg: SplitConfig,
    size: int,
    engine: Verifier | None,
    progress: tqdm | None = None,
    workers: int = 1,
    *,
    start: int = 0,
    verify_engine: str = "auto",
) -> SplitResult:
    """Write ``size`` verified games, indices ``start .. start + size - 1``; game ``i`` has task
    type ``cfg.task_type(i)``.

    With ``workers > 1`` games are drawn, verified and written in that many processes; every
    game depends only on (seed, split, index), so the files are the same bytes either way, and
    the same as the games of those indices in a split generated from index 0.
    """
    kind = resolve_verify_engine(verify_engine, cfg.knobs)
    result = SplitResult()
    types = split_task_types(cfg, start, size)
    jobs = [(split_dir, cfg, start + k, types[k], kind) for k in range(size)]

    def take(out: GameOutcome) -> None:
        result.too_long += out.too_long
        result.failed += out.failed
        result.games.append(out.record)
        result.timings.append(out.timing)
        result.planner_lengths.append(out.planner_length)
        if progress is not None:
            progress.update(1)
            progress.set_postfix(too_long=result.too_long, failed=len(result.failed))

    if workers > 1 and size > 1:
        n = min(workers, size)
        # a few chunks per process: large enough to keep the pipes quiet, small enough that
        # no process idles long at the end
        chunk = max(1, min(32, size // (8 * n)))
        ctx = multiprocessing.get_context("spawn")
        with ctx.Pool(n) as pool:
            for out in pool.imap(_worker_game, jobs, chunksize=chunk):
                take(out)
    else:
        engine = engine or _engine_for(kind, cfg.knobs.planner_check)
        for job in jobs:
            take(make_game(job[0], cfg, job[2], job[3], engine))
    result.games.sort(key=lambda g: g["relpath"])
    return result


def split_summary(result: SplitResult, scene_pool: str) -> dict:
    """The manifest entry of one split (deterministic: no timings)."""
    lengths = [g["walkthrough_len"] for g in result.games]
    return {
        "n_games": len(result.games),
        "scene_pool": scene_pool,
        "task_types": dict(sorted(Counter(g["task_type"] for g in result.games).items())),
        "walkthrough_len": {
            "min": min(lengths, default=0),
            "max": max(lengths, default=0),
            "mean": round(statistics.fmean(lengths), 3) if lengths else 0,
        },
        "redraws": {"too_long": result.too_long, "failed_verification": len(result.failed)},
        "games": result.games,
    }


# --------------------------------------------------------------------------------------
# The whole run


@dataclass
class RunResult:
    """The manifest entry written for a run, and per-split details that are not written."""

    entry: dict
    splits: dict[str, SplitResult]


def split_scene_pool(preset: str, split: str, eval_scenes: str = "test") -> str:
    """The scene pool of a split: ALFWorld's splits for ``alfworld``, else train / eval."""
    if preset == ALFWORLD_PRESET:
        if split not in SPLIT_POOLS:
            raise ValueError(
                f"the {ALFWORLD_PRESET!r} preset has ALFWorld's splits {sorted(SPLIT_POOLS)}, "
                f"not {split!r}"
            )
        return SPLIT_POOLS[split]
    return "train" if split == "train" else eval_scenes


def generate(
    out: str | Path,
    split_sizes: dict[str, int] | None = None,
    *,
    preset: str = "mini",
    seed: int = 0,
    knobs: Knobs | None = None,
    task_types: Sequence[str] = TASK_TYPES,
    eval_scenes: str = "test",
    manifest: str | Path | None = None,
    command: str = "",
    overwrite: bool = False,
    show_progress: bool = True,
    workers: int = 1,
    verify_engine: str = "auto",
    first_index: int = 0,
) -> RunResult:
    """Generate every split under ``out`` and update the manifest.

    ``split_sizes`` defaults to ALFWorld's (3,553 / 140 / 134) for the ``alfworld`` preset,
    else to ``DEFAULT_SPLIT_SIZES``. ``verify_engine``: ``auto`` (``fast``, or ``pddl`` where
    the preset asks the planner), ``fast`` or ``pddl``. ``first_index`` = k writes games
    k .. k + size - 1 of each split: the same files as those games of a split from index 0.
    """
    out = Path(out)
    if preset not in PRESETS:
        raise ValueError(f"unknown preset {preset!r}; known: {sorted(PRESETS)}")
    knobs = knobs or PRESETS[preset]
    kind = resolve_verify_engine(verify_engine, knobs)
    if first_index < 0:
        raise ValueError(f"first_index must be >= 0, not {first_index}")
    if split_sizes is None:
        split_sizes = dict(
            ALFWORLD_SPLIT_SIZES if preset == ALFWORLD_PRESET else DEFAULT_SPLIT_SIZES
        )
    pools = {split: split_scene_pool(preset, split, eval_scenes) for split in split_sizes}
    unknown = [t for t in task_types if t not in TASK_TYPES]
    if unknown:
        raise ValueError(f"unknown task types {unknown}; known: {list(TASK_TYPES)}")
    for split in split_sizes:
        split_dir = out / split
        if split_dir.exists() and any(split_dir.iterdir()):
            if not overwrite:
                raise FileExistsError(f"{split_dir} is not empty (use --overwrite)")
            shutil.rmtree(split_dir)
    engine = _engine_for(kind, knobs.planner_check) if workers <= 1 else None
    entry = {
        "command": command,
        "generator": GENERATOR,
        "version": GENERATOR_VERSION,
        "alfworld_version": alfworld_version(),
        "preset": preset,
        "seed": seed,
        "knobs": knobs.as_meta(),
        "verify_engine": kind,
        "splits": {},
    }
    if first_index:
        entry["first_index"] = first_index
    results = {}
    total = sum(split_sizes.values())
    with tqdm(
        total=total, desc="alfworld games", disable=not show_progress, file=sys.stderr
    ) as bar:
        for split, size in split_sizes.items():
            pool = pools[split]
            mix = "alfworld" if preset == ALFWORLD_PRESET else "cycle"
            cfg = SplitConfig(split, preset, knobs, seed, tuple(task_types), pool, mix)
            results[split] = generate_split(
                out / split, cfg, size, engine, bar, workers, start=first_index, verify_engine=kind
            )
            entry["splits"][split] = split_summary(results[split], pool)
    manifest_path = Path(manifest) if manifest else out / MANIFEST_FILE
    update_manifest(manifest_path, out, entry)
    return RunResult(entry, results)


def update_manifest(path: Path, out: Path, entry: dict) -> None:
    """Put ``entry`` under ``sets[<out relative to the manifest's folder>]``."""
    key = Path(os.path.relpath(out.resolve(), path.parent.resolve())).as_posix()
    data = {"format": 1, "sets": {}}
    if path.is_file():
        data = json.loads(path.read_text(encoding="utf-8"))
    data.setdefault("sets", {})[key] = entry
    data["sets"] = dict(sorted(data["sets"].items()))
    _write(path, json.dumps(data, indent=2, sort_keys=True) + "\n")


def check_manifest(path: str | Path, replay: bool = True, engine: str = "fast") -> list[str]:
    """Problems with a manifest's games: hash mismatches, and walkthroughs that do not win
    (replayed on ``engine``: ``fast`` or ``pddl``)."""
    path = Path(path)
    data = json.loads(path.read_text(encoding="utf-8"))
    verifier = make_verifier(engine) if replay else None
    problems = []
    for key, entry in sorted(data["sets"].items()):
        for split, info in entry["splits"].items():
            for game in info["games"]:
                game_dir = path.parent / key / split / game["relpath"]
                for name, digest in game["sha256"].items():
                    if not (game_dir / name).is_file() or sha256_file(game_dir / name) != digest:
                        problems.append(f"{game_dir / name}: missing or hash mismatch")
                if verifier is not None:
                    walk = json.loads((game_dir / GAME_FILE).read_text())["walkthrough"]
                    try:
                        verifier.play(str(game_dir / GAME_FILE), walk)
                    except (VerificationError, RuntimeError) as err:
                        problems.append(f"{game_dir}: {err}")
    return problems


# --------------------------------------------------------------------------------------
# Command line


def _range(text: str) -> tuple[int, int]:
    lo, _, hi = text.partition("-")
    lo_i, hi_i = int(lo), int(hi or lo)
    if lo_i < 0 or hi_i < lo_i:
        raise argparse.ArgumentTypeError(f"bad range {text!r}; use N or MIN-MAX")
    return lo_i, hi_i


def _split_sizes(text: str) -> dict[str, int]:
    sizes = {}
    for part in text.split(","):
        name, _, num = part.partition("=")
        if not name.strip() or not num.isdigit():
            raise argparse.ArgumentTypeError(f"bad split size {part!r}; use NAME=N")
        if int(num) < 1 or name.strip() in sizes:  # an empty or twice-given split is a typo
            raise argparse.ArgumentTypeError(
                f"bad split size {part!r}: each split once, with at least 1 game"
            )
        sizes[name.strip()] = int(num)
    return sizes


def _share(text: str) -> float | str:
    if text == "scene":
        return text
    value = float(text)
    if not 0.0 <= value <= 1.0:
        raise argparse.ArgumentTypeError("--openable-share is in [0, 1] or 'scene'")
    return value


def build_parser() -> argparse.ArgumentParser:
    p = FlagSpellingParser(
        prog=GENERATOR,
        description="Generate verified ALFWorld games offline, in ALFWorld's on-disk format.",
    )
    p.add_argument("--out", help="output folder; splits go to OUT/<split>/")
    p.add_argument(
        "--split-sizes",
        type=_split_sizes,
        default=None,
        help="games per split, e.g. train=36,eval=18 (default; with --preset alfworld: "
        "ALFWorld's train=3553,valid_seen=140,valid_unseen=134)",
    )
    p.add_argument("--preset", choices=sorted(PRESETS), default="mini")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument(
        "--task-types",
        default=",".join(TASK_TYPES),
        help="comma-separated subset of the six task types (games cycle through them)",
    )
    p.add_argument(
        "--eval-scenes",
        choices=("test", "train"),
        default="test",
        help="ALFRED scene pool of the non-train splits (default: held-out 'test')",
    )
    p.add_argument("--receptacles", type=_range, help="receptacles per game, N or MIN-MAX")
    p.add_argument("--distractors", type=_range, help="distractor objects, N or MIN-MAX")
    p.add_argument(
        "--openable-share",
        type=_share,
        help="share of filler receptacles of openable types, or 'scene'",
    )
    p.add_argument("--extra-targets", type=_range, help="extra copies of the target object")
    p.add_argument("--max-walkthrough", type=int, help="redraw games with longer solutions")
    p.add_argument("--manifest", help="manifest to update (default: OUT/MANIFEST.json)")
    p.add_argument("--overwrite", action="store_true", help="replace existing split folders")
    p.add_argument(
        "--check",
        metavar="MANIFEST",
        help="only check a manifest: file hashes, and replay every walkthrough",
    )
    p.add_argument(
        "--verify-engine",
        choices=("auto", *VERIFY_ENGINES),
        default="auto",
        help="engine that plays every walkthrough: fast (native, the default where no planner "
        "check is asked: alfworld), pddl (ALFWorld's TextWorld engine; mini and standard, "
        "whose planner check needs it); --check replays on fast unless pddl is given",
    )
    p.add_argument(
        "--first-index",
        type=int,
        default=0,
        help="write games K .. K+N-1 of each split (the same files as in a split from game 0)",
    )
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.add_argument(
        "--workers",
        type=int,
        default=1,
        help="processes drawing and verifying games (same files for any number)",
    )
    return p


def knobs_from_args(args: argparse.Namespace) -> Knobs:
    """The preset's knobs with the command line's overrides."""
    knobs = PRESETS[args.preset]
    if knobs.world == "room":
        given = [
            flag
            for flag, value in (
                ("--receptacles", args.receptacles),
                ("--distractors", args.distractors),
                ("--extra-targets", args.extra_targets),
                ("--openable-share", args.openable_share),
            )
            if value is not None
        ]
        if given:
            raise ValueError(
                f"{', '.join(given)} do not apply to --preset {args.preset} (whole rooms); "
                "only --max-walkthrough does"
            )
    overrides = {
        "receptacles": args.receptacles,
        "distractors": args.distractors,
        "extra_targets": args.extra_targets,
        "max_walkthrough": args.max_walkthrough,
    }
    changes = {k: v for k, v in overrides.items() if v is not None}
    if args.openable_share is not None:
        share = args.openable_share
        changes["openable_share"] = None if share == "scene" else share
    return dataclasses.replace(knobs, **changes)


def _print_timings(run: RunResult) -> None:
    rows = [t for res in run.splits.values() for t in res.timings]
    if not rows:
        return
    load, reset, steps = zip(*rows, strict=True)
    med = statistics.median
    print(
        f"engine per game (median/max s): load {med(load):.2f}/{max(load):.2f}, "
        f"reset {med(reset):.2f}/{max(reset):.2f}, walkthrough {med(steps):.2f}/{max(steps):.2f}",
        file=sys.stderr,
    )


def main(argv: Sequence[str] | None = None) -> int:
    """Console entry point ``mvpo-alfworld-generate``."""
    raw = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser()
    args = parser.parse_args(raw)
    if args.check:
        if not Path(args.check).is_file():
            parser.error(f"--check: no manifest file {args.check}")
        try:
            replay = "pddl" if args.verify_engine == "pddl" else "fast"
            problems = check_manifest(args.check, engine=replay)
        except (ValueError, KeyError, TypeError) as err:  # not JSON, or not a manifest
            parser.error(f"--check: {args.check} is not a generator manifest ({err!r})")
        for line in problems:
            print(line, file=sys.stderr)
        print(f"{args.check}: {'OK' if not problems else f'{len(problems)} problem(s)'}")
        return 1 if problems else 0
    if not args.out:
        parser.error("--out is required (or --check MANIFEST)")
    task_types = tuple(t.strip() for t in args.task_types.split(",") if t.strip())
    if args.workers < 1:
        parser.error("--workers must be at least 1")
    if args.first_index < 0:
        parser.error("--first-index must be at least 0")
    try:
        knobs = knobs_from_args(args)
        resolve_verify_engine(args.verify_engine, knobs)
        split_sizes = args.split_sizes or dict(
            ALFWORLD_SPLIT_SIZES if args.preset == ALFWORLD_PRESET else DEFAULT_SPLIT_SIZES
        )
        for split in split_sizes:
            split_scene_pool(args.preset, split, args.eval_scenes)
        unknown = [t for t in task_types if t not in TASK_TYPES]
        if unknown or not task_types:
            raise ValueError(f"--task-types: unknown {unknown}; known: {','.join(TASK_TYPES)}")
    except ValueError as err:
        parser.error(str(err))
    for split in split_sizes:
        split_dir = Path(args.out) / split
        if not args.overwrite and split_dir.is_dir() and any(split_dir.iterdir()):
            parser.error(f"{split_dir} is not empty (use --overwrite to replace it)")
    try:
        run = generate(
            args.out,
            split_sizes,
            preset=args.preset,
            seed=args.seed,
            knobs=knobs,
            task_types=task_types,
            eval_scenes=args.eval_scenes,
            manifest=args.manifest,
            command=shlex.join([GENERATOR, *raw]),
            overwrite=args.overwrite,
            show_progress=not args.quiet,
            workers=args.workers,
            verify_engine=args.verify_engine,
            first_index=args.first_index,
        )
    except RoomRangeError as err:  # a room out of the preset's ranges is never written
        print(f"{GENERATOR}: error: {err}", file=sys.stderr)
        return 2
    for split, info in run.entry["splits"].items():
        print(
            f"{split}: {info['n_games']} games {info['task_types']} walkthrough "
            f"{info['walkthrough_len']} redraws {info['redraws']}"
        )
    _print_timings(run)
    return 0


if __name__ == "__main__":
    sys.exit(main())
