"""``--experiment FILE``: one TOML file describing an experiment for every command that runs
one (``simulate``, ``compare``, ``trace info``, ``reproduce`` and each ``train NAME``), whose
keys are those commands' options.

The file's top-level keys are the options every such command shares (`SHARED`: the workload,
the cluster, the load and your trace's `TraceOptions`); a command's own options go in its
table (``[simulate]``, ``[compare]``, ``[trace]``, ``[reproduce]``, ``[train]``; one train
command's own in ``[train.NAME]``, read after ``[train]``: ``[train.dl2]``); ``[variants]``
names scheduler specs (``mine = "sched2:runs/mine/policy.pt"``), usable wherever a scheduler
is named and shown by that name. Options given on the command line win over the file; an
unknown key or table is one line naming the file and the key (exit 2). A shared key a
command has no option for is skipped quietly by ``trace info`` (``servers``, ``load``: a
trace's summary does not depend on them), said in one warning by ``reproduce`` (a paper's
experiment runs in its own setting) and refused by ``train deeprm`` (DeepRM trains on its own
jobsets) — each command's `experiment_file` says which. Values are read as the command line
reads them (bounds, choices): a list is joined with commas (``schedulers = ["drf",
"mine"]``), a table becomes ``KEY=VALUE,…`` (``columns = {duration = "runtime_min"}``).
Paths are as on the command line (relative to the current folder).

Example::

    workload = "trace:mine.csv"
    columns = {submit_time = "submitted", duration = "runtime_min"}
    time_unit = "min"
    split = "0.6,0.2,0.2"

    [compare]
    part = "test"
    schedulers = ["fifo", "sjf", "mine"]

    [variants]
    mine = "sched2:runs/mine/policy.pt"
"""

from __future__ import annotations

import inspect
import logging
import typing
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Annotated, Any

import typer

from dlsched.commands.common import one_line_errors
from dlsched.commands.config_options import as_command
from dlsched.workloads.traces.options import TraceOptions

log = logging.getLogger("dlsched.cli")

SHARED = frozenset({"workload", "servers", "load"} | {f.name for f in fields(TraceOptions)})
"""Top-level keys: options every command taking ``--experiment`` has."""

TABLES = ("simulate", "compare", "train", "trace", "reproduce")
"""A command's own options go in the table of its name (``train sched2``: ``[train]``, and
``[train.sched2]`` for what only it reads; ``trace info``: ``[trace]``)."""

Unused = typing.Literal["skip", "warn", "refuse"]
"""What a command does with a shared key it has no option for (module docstring)."""

Variants = dict[str, str]

_ExperimentOpt = Annotated[
    Path | None,
    typer.Option(
        "--experiment",
        help="A TOML experiment file whose keys are this command's options (the trace, its "
        "columns, units, split, named variants …); options given here win. README: Your own trace.",
    ),
]


def experiment_file(
    table: str,
    *,
    sub: str | None = None,
    unused: Unused = "skip",
    why: str = "",
    accepts: Mapping[str, object] | None = None,
) -> Callable[[Callable[..., None]], Callable[..., None]]:
    """Add ``--experiment FILE`` to a Typer command (module docstring): the file's shared keys
    and those of ``[table]`` (then ``[table.sub]``) fill the options not given on the command
    line. A shared key the command has no option for is skipped, warned about or refused as
    ``unused`` says, ``why`` saying why it does not apply, unless its value is the one
    ``accepts`` gives (``train deeprm``: ``workload = "deeprm"``). A ``variants`` parameter of
    ``body`` (not an option) receives the file's ``[variants]``."""
    where = Where(table, sub, unused, why, dict(accepts or {}))

    def decorate(body: Callable[..., None]) -> Callable[..., None]:
        hints = typing.get_type_hints(body, include_extras=True)
        own = [
            p.replace(annotation=hints.get(p.name, p.annotation))
            for p in inspect.signature(body).parameters.values()
            if p.name != "variants"
        ]
        wants_variants = len(own) < len(inspect.signature(body).parameters)
        required = [p.name for p in own if p.default is inspect.Parameter.empty]
        own = [p.replace(default=None) if p.name in required else p for p in own]
        experiment = inspect.Parameter(
            "experiment", inspect.Parameter.KEYWORD_ONLY, default=None, annotation=_ExperimentOpt
        )
        context = inspect.Parameter(
            "experiment_ctx", inspect.Parameter.KEYWORD_ONLY, annotation=typer.Context
        )

        def command(**given: Any) -> None:
            path = given.pop("experiment")
            ctx = given.pop("experiment_ctx")
            variants: Variants = {}
            if path is not None:
                with one_line_errors():
                    variants = apply_experiment(path, where, given, ctx)
            _check_required(ctx, given, required, table)
            if wants_variants:
                given["variants"] = variants
            body(**given)

        as_command(command, body, [*own, experiment, context])
        return command

    return decorate


def _check_required(
    ctx: typer.Context, given: dict[str, Any], required: list[str], table: str
) -> None:
    """A required option given neither here nor in the experiment file: one line, exit 2.
    (Required options are optional to Typer so that the file may give them.)"""
    for name in required:
        if given[name] is None:
            param = next(p for p in ctx.command.params if p.name == name)
            flag = param.opts[0]
            what = "option" if flag.startswith("--") else "argument"
            with one_line_errors():
                raise ValueError(
                    f"missing {what} {flag if what == 'option' else name.upper()} (give it "
                    f"here, or {flag.lstrip('-')} = … under [{table}] of an --experiment file)"
                )


def read_experiment(path: Path) -> dict[str, Any]:
    """The file's TOML data; ValueError (one line naming the file) if unreadable."""
    import tomllib  # only with --experiment (start-up, issue 34)

    try:
        with path.open("rb") as f:
            return tomllib.load(f)
    except tomllib.TOMLDecodeError as exc:
        raise ValueError(f"{path}: not valid TOML: {exc}") from None
    except OSError as exc:
        raise ValueError(f"{path}: cannot read the experiment file: {exc.strerror}") from None


@dataclass(frozen=True)
class Where:
    """Which tables of the file a command reads and what it does with shared keys it has no
    option for (`experiment_file`'s arguments)."""

    table: str
    sub: str | None = None
    unused: Unused = "skip"
    why: str = ""
    accepts: Mapping[str, object] = field(default_factory=dict)


def apply_experiment(
    path: Path, where: Where, given: dict[str, Any], ctx: typer.Context
) -> Variants:
    """Fill ``given`` (parameter name → value) from the file where the command line gave
    nothing; return its ``[variants]``."""
    data = read_experiment(path)
    variants = _variants(data.pop("variants", {}), path)
    by_key = _keys(ctx.command.params)
    values: dict[str, tuple[str, Any]] = {}
    for key, value in data.items():
        if key in TABLES:
            if not isinstance(value, dict):
                raise ValueError(f"{path}: [{key}] must be a table of options")
            continue
        name = key.replace("-", "_")
        if name not in SHARED:
            raise ValueError(
                f"{path}: unknown key {key!r}; top-level keys are {', '.join(sorted(SHARED))}; "
                f"a command's own options go in [{'], ['.join(TABLES)}]"
            )
        values[name] = (key, value)
    for shown, key, value in _own_keys(path, data, where, by_key):
        values[key.replace("-", "_")] = (shown, value)
    _unused(
        path,
        where,
        [
            shown
            for name, (shown, value) in values.items()
            if name not in by_key and where.accepts.get(name, where) != value
        ],
    )
    for name, (shown, value) in values.items():
        param = by_key.get(name)
        if param is None or param.name is None:
            continue  # a shared key this command has no option for (`_unused`)
        source = ctx.get_parameter_source(param.name)
        if source is not None and source.name == "COMMANDLINE":
            continue
        try:
            given[param.name] = param.process_value(ctx, _as_cli(value, param))
        except typer.BadParameter as exc:
            raise ValueError(f"{path}: {shown}: {exc.format_message()}") from None
    return variants


def _own_keys(
    path: Path, data: Mapping[str, Any], where: Where, by_key: Mapping[str, Any]
) -> list[tuple[str, str, Any]]:
    """(how to name it, key, value) of each key of the command's table, then of its
    ``[table.sub]``; ValueError for a key that is no option of the command. Another train
    command's sub-table (a table-valued key that is not an option) is left to that command."""
    table, sub = where.table, where.sub
    own: list[tuple[str, str, Any]] = []
    subtable: Mapping[str, Any] = {}
    for key, value in data.get(table, {}).items():
        name = key.replace("-", "_")
        if name not in by_key and isinstance(value, dict) and sub is not None:
            if key not in _train_commands():
                raise ValueError(
                    f"{path}: [{table}.{key}]: no train command {key!r} "
                    f"({', '.join(_train_commands())})"
                )
            subtable = value if key == sub else subtable
            continue
        if name not in by_key:
            raise ValueError(f"{path}: [{table}] has unknown key {key!r}: no such option here")
        own.append((f"{table}.{key}", key, value))
    for key, value in subtable.items():
        if key.replace("-", "_") not in by_key:
            raise ValueError(
                f"{path}: [{table}.{sub}] has unknown key {key!r}: no such option here"
            )
        own.append((f"{table}.{sub}.{key}", key, value))
    return own


def _train_commands() -> list[str]:
    """The names of the ``dlsched train`` commands (each a ``[train.NAME]`` table)."""
    from dlsched.plugins import plugins

    return [command.name for plugin in plugins() for command in plugin.train_commands]


def _unused(path: Path, where: Where, keys: list[str]) -> None:
    """Skip, warn about or refuse the shared ``keys`` the command has no option for."""
    if not keys or where.unused == "skip":
        return
    line = (
        f"{path}: {', '.join(keys)} do{'es' if len(keys) == 1 else ''} not apply here ({where.why})"
    )
    if where.unused == "refuse":
        raise ValueError(line)
    log.warning("%s", line)


def _keys(params: list[Any]) -> dict[str, Any]:
    """Each option (a Click option of Typer's) by its long name with ``_`` for ``-``
    (``--jobs-out`` → ``jobs_out``)."""
    keys: dict[str, Any] = {}
    for param in params:
        if param.param_type_name == "argument" and param.name is not None:
            keys[param.name] = param  # an argument, by its name: [reproduce] name = "…"
        if param.param_type_name != "option" or param.name == "experiment":
            continue
        for flag in param.opts:
            if flag.startswith("--"):
                keys[flag[2:].replace("-", "_")] = param
    return keys


def _as_cli(value: Any, param: Any) -> Any:
    """A TOML value as the command line gives it: lists joined with commas (kept a list for a
    repeatable option), tables as ``KEY=VALUE`` items."""
    if isinstance(value, Mapping):
        value = [f"{k}={v}" for k, v in value.items()]
    if isinstance(value, list):
        items = [str(v) for v in value]
        return items if param.multiple else ",".join(items)
    if param.multiple:
        return [str(value)]
    return value


def _variants(value: object, path: Path) -> Variants:
    if not isinstance(value, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in value.items()
    ):
        raise ValueError(f'{path}: [variants] must map names to scheduler specs (mine = "…")')
    for name in value:
        if not name or ":" in name or "=" in name or "," in name:
            raise ValueError(f"{path}: variant name {name!r} may not contain ':', '=' or ','")
    return dict(value)


def scheduler_specs(names: list[str], variants: Mapping[str, str]) -> list[tuple[str, str]]:
    """(label, spec) for each name: a variant's name → its spec, ``NAME=SPEC`` inline, or a
    plain spec labelled by itself."""
    pairs = []
    for name in names:
        label, sep, spec = name.partition("=")
        if sep:
            if not label.strip() or not spec.strip():
                raise ValueError(f"--schedulers: {name!r} is not NAME=SPEC")
            pairs.append((label.strip(), spec.strip()))
        else:
            pairs.append((name, variants.get(name, name)))
    return pairs
