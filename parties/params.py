"""Typed parameters: a system's options as one frozen dataclass, each field declared once with
its command-line flag, help, parser and constraints, built from the command line, the Python
API or a deployment file and validated once.

A field is an :func:`option`::

    @dataclass(frozen=True)
    class SumOptions(Params):
        parties: int = option(3, flag="--parties", metavar="K", help="number of parties",
                              check=AtLeast(2))
        reveal: str = option("all", flag="--reveal", choices=("all", "receiver"), help="...",
                             key="reveal")

* :meth:`Params.add_arguments` declares the options on an argparse parser;
* :meth:`Params.from_namespace` (the command line), :meth:`Params.from_options` (keyword
  arguments of :func:`parties.api.run_system`: a field's name, its typed value or the text the
  command line would take) and :meth:`Params.from_deployment` (a deployment file's
  ``[protocol.params]``: the fields with a ``key``) build it, and all three validate it the
  same way: each field's checks, then the class's own :meth:`Params.check` of fields together;
* :meth:`Params.to_deployment` writes the fields with a ``key`` for the deployment file.

A wrong value is a :class:`~mpc.errors.ConfigError` that names the option as its caller knows
it: its flag (``--max-depth must be at least 1, got 0``) or its deployment key
(``deployment.toml: protocol params 'max_depth' must be at least 1, got 0``).
"""

from __future__ import annotations

import argparse
import dataclasses
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, Self

from mpc.errors import ConfigError

__all__ = [
    "AtLeast",
    "Between",
    "Check",
    "NumberList",
    "Opt",
    "Params",
    "column_list",
    "option",
]

#: "no default": a required option
REQUIRED: Any = dataclasses.MISSING


class Check:
    """A constraint on one field's value: ``check(value, name)`` raises
    :class:`~mpc.errors.ConfigError` naming ``name`` when the value breaks it. ``None`` (an
    option not given) passes every check."""

    def __call__(self, value: Any, name: str) -> None:
        raise NotImplementedError


@dataclass(frozen=True)
class AtLeast(Check):
    """A number at least ``low``."""

    low: float

    def __call__(self, value: Any, name: str) -> None:
        if value is not None and value < self.low:
            low = int(self.low) if float(self.low).is_integer() else self.low
            raise ConfigError(f"{name} must be at least {low}, got {value}")


@dataclass(frozen=True)
class Between(Check):
    """A number in ``[low, high]`` (``high_open``: ``[low, high)``)."""

    low: float
    high: float
    high_open: bool = False

    def __call__(self, value: Any, name: str) -> None:
        if value is None:
            return
        if self.high_open:
            if not self.low <= value < self.high:
                raise ConfigError(f"{name} must be in [{self.low}, {self.high}), got {value}")
        elif not self.low <= value <= self.high:
            raise ConfigError(f"{name} must be between {self.low} and {self.high}, got {value}")


class NumberList:
    """The parser of an option whose value is a comma-separated list of numbers
    (``--inputs -3,4,5``). ``mpc`` keeps a value that starts with a minus sign after such an
    option as its value (argparse alone takes it for an option; :mod:`parties.cli.parser`).

    Called with the option's text, it returns ``parse(text)``: by default the list of
    integers; an :class:`argparse.ArgumentTypeError` naming what was expected otherwise."""

    def __init__(self, parse: Callable[[str], Any] | None = None) -> None:
        self.parse = parse
        self.__name__ = "number list"  # what argparse calls the type in its messages

    def __call__(self, text: str) -> Any:
        if self.parse is not None:
            return self.parse(text)
        try:
            return [int(v) for v in text.split(",")]
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"expected comma-separated integers (e.g. -3,4,5), got {text!r}"
            ) from None


def column_list(text: str) -> tuple[str, ...]:
    """``COL,...``: column names, none empty."""
    names = tuple(c.strip() for c in text.split(","))
    if not all(names):
        raise argparse.ArgumentTypeError(f"expected comma-separated column names, got {text!r}")
    return names


@dataclass(frozen=True)
class Opt:
    """How one field of a :class:`Params` is given and checked (see :func:`option`)."""

    flag: str | None = None
    help: str = ""
    metavar: str | None = None
    parse: Callable[[str], Any] | None = None
    #: the values allowed; a registry (a dict) is read when the options are used, so that an
    #: entry added later is a choice too
    choices: Collection[Any] | None = None
    flag_only: bool = False  # a switch: given or not (True / False)
    group: str | None = None  # a mutually exclusive group of the command line
    required: bool = False  # a required option of the command line
    key: str | None = None  # its key in the deployment file's params; None: launcher only
    check: tuple[Check, ...] = ()
    output: str | None = None  # "file", "folder" or "either": a path this run writes
    #: default shown on the command line when the field's default is None (text only)
    repeat: bool = False  # may be given several times (a list of values)


def option(
    default: Any = REQUIRED,
    *,
    flag: str | None = None,
    help: str = "",
    metavar: str | None = None,
    parse: Callable[[str], Any] | None = None,
    choices: Collection[Any] | None = None,
    flag_only: bool = False,
    group: str | None = None,
    required: bool = False,
    key: str | None = None,
    check: Check | Sequence[Check] = (),
    output: str | None = None,
    repeat: bool = False,
) -> Any:
    """A field of a :class:`Params` dataclass: its default, its command-line ``flag`` (None:
    not an option of the command line), ``help``, ``metavar``, ``parse`` (text to value;
    default: the default's type), ``choices``, ``flag_only`` (a switch), ``group`` (a mutually
    exclusive group), ``required``, its deployment ``key`` (None: the launcher's only),
    ``check`` (:class:`Check` constraints), ``output`` (a path the run writes: ``"file"``,
    ``"folder"`` or ``"either"``, checked before anything runs) and ``repeat``."""
    checks = (check,) if isinstance(check, Check) else tuple(check)
    meta = Opt(flag, help, metavar, parse, choices, flag_only, group, required, key, checks,
               output, repeat)  # fmt: skip
    if isinstance(default, list | dict | set):
        raise TypeError("a mutable default: give a tuple")
    return dataclasses.field(default=default, metadata={"opt": meta})


def _opt(f: dataclasses.Field[Any]) -> Opt:
    return f.metadata.get("opt") or Opt()


@dataclass(frozen=True)
class Params:
    """The base of every system's options and parameters (see the module docstring)."""

    #: groups of the command line that need one of their options (``{"source": True}``)
    REQUIRED_GROUPS: ClassVar[Mapping[str, bool]] = {}

    # ----------------------------------------------------------------- the command line

    @classmethod
    def add_arguments(cls, parser: Any) -> None:
        """Declare every field with a ``flag`` on ``parser`` (an :mod:`argparse` parser),
        under its field name, the groups made mutually exclusive."""
        groups: dict[str, Any] = {}
        for f in dataclasses.fields(cls):
            o = _opt(f)
            if o.flag is None:
                continue
            target = parser
            if o.group is not None:
                if o.group not in groups:
                    groups[o.group] = parser.add_mutually_exclusive_group(
                        required=cls.REQUIRED_GROUPS.get(o.group, False)
                    )
                target = groups[o.group]
            kw: dict[str, Any] = {"dest": f.name, "help": o.help}
            if o.flag_only:
                kw["action"] = "store_true"
                kw["default"] = False
            else:
                kw["default"] = None if f.default is REQUIRED else f.default
                if o.repeat:
                    kw["action"] = "append"
                    kw["default"] = None
                if o.metavar is not None:
                    kw["metavar"] = o.metavar
                if o.choices is not None:
                    kw["choices"] = o.choices
                parse = o.parse or _type_of(f)
                if parse is not None:
                    kw["type"] = parse
                if o.required:
                    kw["required"] = True
            target.add_argument(o.flag, **kw)

    @classmethod
    def from_namespace(cls, args: argparse.Namespace) -> Self:
        """The options as the command line gave them (``args``, of :meth:`add_arguments`)."""
        values = {}
        for f in dataclasses.fields(cls):
            if _opt(f).flag is None or not hasattr(args, f.name):
                continue
            value = getattr(args, f.name)
            if _opt(f).repeat and value is None:
                value = ()
            elif isinstance(value, list):
                value = tuple(value)
            values[f.name] = value
        return cls.build(values, lambda f: _opt(f).flag or f.name)

    @classmethod
    def from_options(cls, **options: Any) -> Self:
        """The options as keyword arguments: a field's name (``class_site=2`` for
        ``--class-site 2``); its typed value or the text the command line takes (parsed the
        same way); True or False for a switch; a list for a list; None for the default."""
        fields = {f.name: f for f in dataclasses.fields(cls) if _opt(f).flag is not None}
        unknown = sorted(set(options) - set(fields))
        if unknown:
            raise ConfigError(
                f"no option {', '.join(map(repr, unknown))}; the options are {sorted(fields)}"
            )
        values: dict[str, Any] = {}
        for name, value in options.items():
            f, o = fields[name], _opt(fields[name])
            if value is None:
                continue
            if o.flag_only:
                if not isinstance(value, bool):
                    raise ConfigError(f"{name} is a flag: give True or False, got {value!r}")
            elif o.repeat:
                items = value if isinstance(value, list | tuple) else [value]
                value = tuple(_parsed(f, o, v) for v in items)
            elif isinstance(value, list | tuple) and isinstance(o.parse, NumberList):
                value = _parsed(f, o, ",".join(str(v) for v in value))
            elif isinstance(value, list | tuple):
                value = tuple(value)
            else:
                value = _parsed(f, o, value)
            if o.choices is not None and value not in o.choices:
                choices = ", ".join(map(repr, o.choices))
                raise ConfigError(
                    f"argument {o.flag}: invalid choice: {value!r} (choose from {choices})"
                )
            values[name] = value
        return cls.build(values, lambda f: _opt(f).flag or f.name)

    # ----------------------------------------------------------------- the deployment file

    @classmethod
    def from_deployment(cls, params: Mapping[str, Any], where: str) -> Self:
        """The fields with a ``key``, read from a deployment file's ``[protocol.params]``
        (``where``: the file, for messages). Integers too large for TOML may be strings."""
        values: dict[str, Any] = {}
        for f in dataclasses.fields(cls):
            o = _opt(f)
            if o.key is None or o.key not in params:
                continue
            values[f.name] = _from_toml(f, params[o.key], f"{where}: protocol params {o.key!r}")
        return cls.build(values, lambda f: f"{where}: protocol params {_opt(f).key!r}")

    def to_deployment(self) -> dict[str, Any]:
        """The fields with a ``key``, for a deployment file (None values left out)."""
        out: dict[str, Any] = {}
        for f in dataclasses.fields(self):
            o = _opt(f)
            value = getattr(self, f.name)
            if o.key is None or value is None:
                continue
            if isinstance(value, tuple):
                value = list(value)
            elif isinstance(value, int) and not isinstance(value, bool):
                # TOML holds 64-bit integers: a larger one travels as a string
                value = value if -(2**63) <= value < 2**63 else str(value)
            out[o.key] = value
        return out

    # ----------------------------------------------------------------- validation

    @classmethod
    def build(cls, values: Mapping[str, Any], name_of: Callable[[Any], str]) -> Self:
        """``cls(**values)``, validated: every field's checks (``name_of(field)`` names it in
        an error), then :meth:`check`."""
        missing = [f for f in dataclasses.fields(cls)
                   if f.default is REQUIRED and f.name not in values]  # fmt: skip
        if missing:
            raise ConfigError(f"{name_of(missing[0])} is required")
        cls._check_groups(values)
        values = {k: tuple(v) if isinstance(v, list) else v for k, v in values.items()}
        made = cls(**values)
        for f in dataclasses.fields(cls):
            value = getattr(made, f.name)
            if _opt(f).required and (value is None or value == "" or value == ()):
                raise ConfigError(f"{name_of(f)} is required")
            for check in _opt(f).check:
                check(getattr(made, f.name), name_of(f))
        made.check()
        return made

    @classmethod
    def _check_groups(cls, values: Mapping[str, Any]) -> None:
        """At most one option of a mutually exclusive group given, and one at least of a
        required group (:attr:`REQUIRED_GROUPS`), as argparse says it on the command line."""
        groups: dict[str, list[str]] = {}
        for f in dataclasses.fields(cls):
            o = _opt(f)
            if o.group is None:
                continue
            groups.setdefault(o.group, [])
            value = values.get(f.name)
            if not (value is None or value is False or value == ()):
                groups[o.group].append(str(o.flag))
        for group, given in groups.items():
            if len(given) > 1:
                raise ConfigError(f"argument {given[1]}: not allowed with argument {given[0]}")
            if not given and cls.REQUIRED_GROUPS.get(group):
                flags = [str(_opt(f).flag) for f in dataclasses.fields(cls)
                         if _opt(f).group == group]  # fmt: skip
                raise ConfigError(f"one of the arguments {' '.join(flags)} is required")

    def check(self) -> None:
        """The class's own rules over several fields (raise :class:`~mpc.errors.ConfigError`);
        nothing by default."""

    def given(self, name: str) -> bool:
        """Whether the option ``name`` was given (it differs from its default)."""
        f = next(f for f in dataclasses.fields(self) if f.name == name)
        return getattr(self, name) != (None if f.default is REQUIRED else f.default)

    @classmethod
    def outputs(cls) -> list[tuple[str, str, str]]:
        """``(flag, field, kind)`` of every field that names a path the run writes."""
        return [(_opt(f).flag or f.name, f.name, str(_opt(f).output))
                for f in dataclasses.fields(cls) if _opt(f).output]  # fmt: skip

    @classmethod
    def option_names(cls) -> list[str]:
        """The names of the options (the fields with a command-line flag), sorted."""
        return sorted(f.name for f in dataclasses.fields(cls) if _opt(f).flag is not None)

    @classmethod
    def flag_of(cls, name: str) -> str:
        """The command-line flag of field ``name``."""
        f = next(f for f in dataclasses.fields(cls) if f.name == name)
        return _opt(f).flag or name


def _type_of(f: dataclasses.Field[Any]) -> Callable[[str], Any] | None:
    """The parser of a field from its default's type (int, float, Path), else None (text)."""
    default = f.default
    if isinstance(default, bool) or default is None or default is REQUIRED:
        return _annotated_type(f)
    if isinstance(default, int | float):
        return type(default)
    if isinstance(default, Path):
        return Path
    return None


def _annotated_type(f: dataclasses.Field[Any]) -> Callable[[str], Any] | None:
    text = str(f.type).replace(" ", "")
    for name, kind in (("int", int), ("float", float), ("Path", Path)):
        if text in (name, f"{name}|None", f"None|{name}"):
            return kind
    return None


def _parsed(f: dataclasses.Field[Any], o: Opt, value: Any) -> Any:
    """A keyword argument's value: text goes through the field's parser, as on the command
    line; a typed value is taken as it is."""
    parse = o.parse or _type_of(f)
    if o.parse is not None and not isinstance(value, str | bool):
        value = str(value)  # an option with a parser of its own reads its value as text
    if isinstance(value, str) and parse is not None and parse is not str:
        try:
            return parse(value)
        except (argparse.ArgumentTypeError, ValueError) as exc:
            raise ConfigError(f"{f.name}: {exc}") from None
    if isinstance(value, bool) and parse in (int, float):
        raise ConfigError(f"{f.name}: expected a number, got {value!r}")
    if parse is Path and isinstance(value, str):
        return Path(value)
    return value


def _from_toml(f: dataclasses.Field[Any], value: Any, name: str) -> Any:
    """A deployment value for field ``f``: a number given as a string (TOML's 64-bit limit)
    becomes the number; a list becomes a tuple; anything else of the wrong type is an error."""
    kind = _type_of(f)
    if kind in (int, float) and isinstance(value, str):
        try:
            return kind(value)
        except ValueError:
            raise ConfigError(f"{name}: expected a number, got {value!r}") from None
    if kind in (int, float) and (isinstance(value, bool) or not isinstance(value, int | float)):
        raise ConfigError(f"{name}: expected a number, got {value!r}")
    if isinstance(value, list):
        return tuple(value)
    return value
