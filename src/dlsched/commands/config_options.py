"""Commands generated from documented config dataclasses (CleanRL's ``Args`` turned into a
CLI): one option per field, its help the field's docstring, its bounds and other names from
`dlsched.option_fields.Opt`.

`train_command` builds a ``dlsched train`` command: the options of `RunOptions` (``--out``,
``--max-minutes``, ``--tensorboard``, ``--resume``, ``--force``, the same for every paper), then
those of each `Section`; `options_command` builds any other command the same way, without
`RunOptions` (``dlsched live run``, ``dlsched k8s run``). The command body receives the
dataclass instances, built and checked before it runs (a bad value is one ``error:`` line
naming the option, exit 2). Old option spellings (`Renamed`) keep working for one release:
hidden, they set the new field and leave a warning in the log once the command has succeeded
(never a line before an error).

Example::

    @train_command(Section(ReinforceConfig), Section(DeepRMRunArgs))
    def train_deeprm_command(run: RunOptions, config: ReinforceConfig, args: DeepRMRunArgs):
        \"\"\"Train DeepRM.\"\"\"
"""

from __future__ import annotations

import dataclasses
import inspect
import logging
import math
import types
import typing
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal, Union

import typer

from dlsched.cli_errors import finite_range
from dlsched.commands.common import escape_markup, one_line_errors
from dlsched.option_fields import Opt, field_docs
from dlsched.rl.run_options import RunOptions

log = logging.getLogger("dlsched.cli")

SCALARS = (int, float, str, bool, Path)


@dataclass(frozen=True)
class Section:
    """A config dataclass whose fields become options.

    Attributes:
        cls: the dataclass.
        prefix: put before each field's name (``"es_"``: field ``pairs`` is ``--es-pairs``).
        skip: fields the command sets itself (not options).
        defaults: the command's defaults where they differ from the dataclass's.
    """

    cls: type
    prefix: str = ""
    skip: tuple[str, ...] = ()
    defaults: Mapping[str, Any] = dataclasses.field(default_factory=dict)


@dataclass(frozen=True)
class Renamed:
    """An old spelling of an option, kept hidden for one release.

    Attributes:
        old: the old option, ``"--time-budget"``.
        new: the new option, ``"--max-minutes"``.
        factor: new value = old value × factor (a change of unit).
        min: smallest old value accepted.
        max: largest old value accepted.
    """

    old: str
    new: str
    factor: float = 1.0
    min: float = 0.0
    max: float = 1e9


@dataclass(frozen=True)
class _Option:
    """One generated option: which field of which section it sets and how to read it."""

    param: str
    flag: str
    section: int
    field: str
    convert: Callable[[Any], Any]


def train_command(
    *sections: Section, renamed: Sequence[Renamed] = ()
) -> Callable[[Callable[..., None]], Callable[..., None]]:
    """Decorate ``body(run, *configs)`` into a Typer command with one option per field of
    `RunOptions` and of each section's dataclass (module docstring)."""
    return options_command(Section(RunOptions), *sections, renamed=renamed)


def options_command(
    *every: Section, renamed: Sequence[Renamed] = ()
) -> Callable[[Callable[..., None]], Callable[..., None]]:
    """Decorate ``body(*configs)`` into a Typer command with one option per field of each
    section's dataclass, in order (`train_command` without `RunOptions`: ``dlsched live run``,
    ``dlsched k8s run``)."""

    def decorate(body: Callable[..., None]) -> Callable[..., None]:
        parameters, options = _options_of(every)
        by_flag = {o.flag: o for o in options}
        parameters += [_renamed_parameter(old) for old in renamed]

        def command(**given: Any) -> None:
            notes: list[str] = []
            with one_line_errors():
                _apply_renamed(given, renamed, by_flag, notes)
                configs = _configs(every, options, given)
            body(*configs)
            for note in notes:  # after success: never an extra line before an error
                log.warning(note)

        as_command(command, body, parameters)
        return command

    return decorate


def with_sections(
    **sections: Section,
) -> Callable[[Callable[..., None]], Callable[..., None]]:
    """Add the options of each section's dataclass to a hand-written Typer command: ``body``'s
    parameter named as the keyword receives the dataclass instance, built and checked before
    ``body`` runs (a bad value is one ``error:`` line, exit 2).

    Example::

        @app.command()
        @with_sections(trace=Section(TraceOptions))
        def simulate(workload: str = "dl2", *, trace: TraceOptions) -> None: ...
    """
    names = list(sections)

    def decorate(body: Callable[..., None]) -> Callable[..., None]:
        hints = typing.get_type_hints(body, include_extras=True)
        own = [
            p.replace(annotation=hints.get(p.name, p.annotation))
            for p in inspect.signature(body).parameters.values()
            if p.name not in sections
        ]
        added, options = _options_of([sections[name] for name in names])
        for parameter, option in zip(added, options, strict=True):
            if any(p.name == parameter.name for p in own):
                raise TypeError(f"{body.__name__}: option {option.flag} defined twice")

        def command(**given: Any) -> None:
            with one_line_errors():
                configs = _configs([sections[name] for name in names], options, given)
            for option in options:
                del given[option.param]
            body(**given, **dict(zip(names, configs, strict=True)))

        as_command(command, body, own + added)
        return command

    return decorate


def as_command(command: Callable[..., None], body: Callable[..., None], params: list[Any]) -> None:
    """Give ``command`` ``body``'s name and help, and the parameters ``params`` (for Typer)."""
    command.__signature__ = inspect.Signature(params)  # type: ignore[attr-defined]
    command.__annotations__ = {p.name: p.annotation for p in params}
    command.__name__ = body.__name__
    command.__doc__ = body.__doc__
    command.__module__ = body.__module__


def _options_of(sections: Sequence[Section]) -> tuple[list[inspect.Parameter], list[_Option]]:
    """The Typer parameters and the options of every section's fields, in order."""
    parameters: list[inspect.Parameter] = []
    options: list[_Option] = []
    for index, section in enumerate(sections):
        for parameter, option in _section_options(section, index):
            parameters.append(parameter)
            options.append(option)
    return parameters, options


def _configs(
    sections: Sequence[Section], options: Sequence[_Option], given: Mapping[str, Any]
) -> list[Any]:
    """Each section's dataclass built from the values ``given`` to its options."""
    values: list[dict[str, Any]] = [{} for _ in sections]
    for option in options:
        values[option.section][option.field] = option.convert(given[option.param])
    return [s.cls(**v) for s, v in zip(sections, values, strict=True)]


def _section_options(section: Section, index: int) -> list[tuple[inspect.Parameter, _Option]]:
    """The options of ``section``'s fields (fields that are not options are left out)."""
    hints = typing.get_type_hints(section.cls, include_extras=True)
    docs = field_docs(section.cls)
    made = []
    for fld in dataclasses.fields(section.cls):
        if fld.name in section.skip or not fld.init:
            continue
        built = _option(section, index, fld, hints[fld.name], docs.get(fld.name, ""))
        if built is not None:
            made.append(built)
    return made


def _option(
    section: Section, index: int, fld: dataclasses.Field[Any], hint: Any, doc: str
) -> tuple[inspect.Parameter, _Option] | None:
    """The parameter and option of one field, or None if the field is not an option."""
    base, opt = _unwrap(hint)
    if not opt.cli:
        return None
    base, optional = _optional(base)
    name = f"{section.prefix}{fld.name}"
    flag = opt.flags[0].split("/")[0] if opt.flags else "--" + name.replace("_", "-")
    kind = _kind(base, opt)
    if kind is None:
        return None
    cli_type, convert, extra = kind(base, opt, flag)
    default = section.defaults.get(fld.name, _default(fld))
    if isinstance(default, tuple) and cli_type is str:
        default = ",".join(str(x) for x in default)
    # Typer renders help as Rich markup: escape it so "dlsched[dask]" is not read as a tag.
    text = escape_markup(doc.replace("``", "").replace("`", "")) or None
    names = opt.flags or ((f"{flag}/--no-{flag[2:]}",) if base is bool else (flag,))
    info = typer.Option(*names, help=text, metavar=opt.metavar, **extra)
    annotation = Annotated[cli_type | None if optional else cli_type, info]  # type: ignore[valid-type]
    parameter = inspect.Parameter(
        name,
        inspect.Parameter.KEYWORD_ONLY,
        default=inspect.Parameter.empty if opt.required else default,
        annotation=annotation,
    )
    return parameter, _Option(name, flag, index, fld.name, _none_passes(convert))


Kind = Callable[[Any, Opt, str], tuple[type, Callable[[Any], Any], dict[str, Any]]]


def _kind(base: Any, opt: Opt) -> Kind | None:
    """How a field of type ``base`` is read (None: not representable as an option)."""
    if opt.parse is not None:
        return _parsed
    if opt.choices:
        return _choice
    if base in (int, float):
        return _number
    if base in SCALARS:
        return lambda b, o, f: (b, _same, {})
    if base == list[str]:  # a repeatable option
        return lambda b, o, f: (list[str], _same, {})
    if typing.get_origin(base) is Literal:
        return _choice
    args = typing.get_args(base)
    if (
        typing.get_origin(base) is tuple
        and args[1:] == (Ellipsis,)
        and args[0] in (int, float, str)
    ):
        return _sequence
    return None


def _parsed(base: Any, opt: Opt, flag: str) -> tuple[type, Callable[[Any], Any], dict[str, Any]]:
    parse = opt.parse
    assert parse is not None
    return str, lambda text: parse(text, flag), {}


def _number(base: Any, opt: Opt, flag: str) -> tuple[type, Callable[[Any], Any], dict[str, Any]]:
    if base is int:
        return int, _same, {"min": opt.min, "max": opt.max}
    low = -math.inf if opt.min is None else opt.min
    high = math.inf if opt.max is None else opt.max
    return float, _same, {"callback": finite_range(low, high)}


def _choice(base: Any, opt: Opt, flag: str) -> tuple[type, Callable[[Any], Any], dict[str, Any]]:
    choices = list(opt.choices) or [str(c) for c in typing.get_args(base)]

    def check(ctx: typer.Context, param: typer.CallbackParam, value: str | None) -> str | None:
        if value is not None and value not in choices:
            raise typer.BadParameter(f"{value!r}: choose {' or '.join(choices)}", ctx, param)  # type: ignore[arg-type]
        return value

    return str, _same, {"callback": check}


def _sequence(base: Any, opt: Opt, flag: str) -> tuple[type, Callable[[Any], Any], dict[str, Any]]:
    element = typing.get_args(base)[0]

    def convert(text: str) -> tuple[Any, ...]:
        values = []
        for part in (p.strip() for p in text.split(",") if p.strip()):
            try:
                value = element(part)
            except ValueError:
                raise ValueError(f"{flag}: {part!r} is not {element.__name__}") from None
            if element is not str and not _within(value, opt):
                raise ValueError(f"{flag}: {part} is outside {opt.min}..{opt.max}")
            values.append(value)
        return tuple(values)

    return str, convert, {}


def _within(value: float, opt: Opt) -> bool:
    if not math.isfinite(value):
        return False
    return (opt.min is None or value >= opt.min) and (opt.max is None or value <= opt.max)


def _same(value: Any) -> Any:
    return value


def _none_passes(convert: Callable[[Any], Any]) -> Callable[[Any], Any]:
    return lambda value: None if value is None else convert(value)


def _unwrap(hint: Any) -> tuple[Any, Opt]:
    """(type without ``Annotated``, its `Opt`)."""
    if typing.get_origin(hint) is Annotated:
        base, *extras = typing.get_args(hint)
        opts = [e for e in extras if isinstance(e, Opt)]
        return base, opts[0] if opts else Opt()
    return hint, Opt()


def _optional(base: Any) -> tuple[Any, bool]:
    """(``X``, True) for ``X | None``; (base, False) otherwise."""
    if typing.get_origin(base) in (Union, types.UnionType):
        args = [a for a in typing.get_args(base) if a is not type(None)]
        if len(args) == 1 and len(typing.get_args(base)) == 2:
            return args[0], True
    return base, False


def _default(fld: dataclasses.Field[Any]) -> Any:
    if fld.default is not dataclasses.MISSING:
        return fld.default
    if fld.default_factory is not dataclasses.MISSING:
        return fld.default_factory()
    return inspect.Parameter.empty


def _renamed_parameter(old: Renamed) -> inspect.Parameter:
    info = typer.Option(old.old, hidden=True, callback=finite_range(old.min, old.max))
    return inspect.Parameter(
        _param_name(old.old),
        inspect.Parameter.KEYWORD_ONLY,
        default=None,
        annotation=Annotated[float | None, info],
    )


def _param_name(flag: str) -> str:
    return "old_" + flag.lstrip("-").replace("-", "_")


def _apply_renamed(
    given: dict[str, Any],
    renamed: Sequence[Renamed],
    by_flag: dict[str, _Option],
    notes: list[str],
) -> None:
    """Move old spellings' values to their new options (both given: ``ValueError``)."""
    for old in renamed:
        value = given.pop(_param_name(old.old), None)
        if value is None:
            continue
        new = by_flag[old.new]
        if given[new.param] is not None:
            raise ValueError(f"{old.old}: give {old.new} only ({old.old} is its old name)")
        given[new.param] = value * old.factor
        notes.append(
            f"{old.old} is deprecated and will be removed; use {old.new} {value * old.factor:g}"
        )
