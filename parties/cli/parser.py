"""The parsers of the ``mpc`` command: argparse parsers that remember what was declared on them.

:class:`CommandParser` keeps every option it declares (:attr:`CommandParser.declared`) and every
sub-command (:attr:`CommandParser.commands`), so that the command can walk its own parsers
without argparse's private attributes; it writes every help text as plain text (no reST
markup), states the output rule in the help of every option that names an output and notes
those options (:attr:`CommandParser.outputs`), and the options whose values are number lists
(:attr:`CommandParser.number_lists`), whose negative values :func:`keep_negative_values`
protects.
"""

from __future__ import annotations

import argparse
import re
from collections.abc import Iterator
from typing import Any, NoReturn

from mpc.runtime.files import OUTPUT_RULE
from parties.params import NumberList

__all__ = [
    "EITHER_OUTPUTS",
    "OUTPUT_OPTIONS",
    "CommandParser",
    "keep_negative_values",
    "plain_text",
    "walk",
]

#: the options that name an output, whatever the command; a metavar of DIR means a folder
OUTPUT_OPTIONS = frozenset(
    {"--out", "--report", "--tree-out", "--dot", "--model-out", "--predictions-out", "--keep",
     "--secrets", "--db", "--cdbs-db", "--plot"}
)  # fmt: skip
#: outputs that are a folder or a file (cdtl-outsource: DIR/client.model.json, or FILE.json)
EITHER_OUTPUTS = frozenset({("cdtl-outsource", "--model-out")})

#: a reST role (``:mod:`x```, ``:func:`~a.b.c```, ``:class:`text <target>```)
_ROLE = re.compile(r":[a-z]+(?::[a-z]+)?:`(?P<tilde>~?)(?P<text>[^`<]*?)\s*(?:<[^>]*>)?`")
#: a value that argparse would take for an option: a number list with a leading minus
_NEGATIVE_VALUE = re.compile(r"-\.?\d.*", re.DOTALL)


def plain_text(text: str) -> str:
    """``text`` (a docstring) without reST markup, as help shows it: a role becomes its text
    (``:func:`~a.b.c``` becomes ``c``), double backticks go, and a ``::`` that opens a literal
    block becomes ``:``."""

    def role(m: re.Match[str]) -> str:
        shown = m["text"]
        return shown.rsplit(".", 1)[-1] if m["tilde"] else shown

    text = _ROLE.sub(role, text)
    text = text.replace("``", "")
    return re.sub(r"(?<=\S)::$", ":", text, flags=re.MULTILINE)


class CommandParser(argparse.ArgumentParser):
    """An :class:`argparse.ArgumentParser` that remembers its options and sub-commands and
    writes plain-text help (see the module docstring)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        for key in ("description", "epilog"):
            if isinstance(kwargs.get(key), str):
                kwargs[key] = plain_text(kwargs[key])
        #: every option declared on this parser (its groups' too), in order
        self.declared: list[argparse.Action] = []
        #: sub-commands by name, and the one-line help of each
        self.commands: dict[str, CommandParser] = {}
        self.command_help: dict[str, str] = {}
        #: ``(flag, dest, kind)`` of every option that names an output (file, folder, either)
        self.outputs: list[tuple[str, str, str]] = []
        #: the flags whose values are number lists
        self.number_lists: set[str] = set()
        # argparse makes its own groups (positionals, options) while it is set up: those stay
        self._set_up = False
        super().__init__(*args, **kwargs)
        self._set_up = True

    def error(self, message: str) -> NoReturn:
        """Exit 2 with ``message`` under this command's usage; a missing sub-command also
        lists the sub-commands, each with its help line."""
        if self.commands and message.startswith("the following arguments are required"):
            width = max(map(len, self.commands))
            listing = "\n".join(
                f"  {name:<{width}}  {self.command_help.get(name, '')}".rstrip()
                for name in self.commands
            )
            message = f"{message}; one of:\n{listing}"
        super().error(message)

    def chosen(self, args: argparse.Namespace) -> CommandParser:
        """The parser of the sub-command (and its sub-command) that ``args`` chose."""
        parser = self
        for dest in ("command", "system"):
            name = getattr(args, dest, None)
            if isinstance(name, str) and name in parser.commands:
                parser = parser.commands[name]
        return parser

    @property
    def command_name(self) -> str:
        return self.prog.rsplit(" ", 1)[-1]

    def add_argument(self, *args: Any, **kwargs: Any) -> argparse.Action:
        return self.note(super().add_argument(*args, **self.prepared(args, kwargs)))

    def add_mutually_exclusive_group(self, **kwargs: Any) -> Any:
        return _Group(super().add_mutually_exclusive_group(**kwargs), self)

    def add_argument_group(self, *args: Any, **kwargs: Any) -> Any:
        group = super().add_argument_group(*args, **kwargs)
        return _Group(group, self) if self._set_up else group

    def add_subparsers(self, **kwargs: Any) -> Any:
        kwargs.setdefault("parser_class", CommandParser)
        return _Commands(super().add_subparsers(**kwargs), self)

    def prepared(self, flags: tuple[Any, ...], kwargs: dict[str, Any]) -> dict[str, Any]:
        """``kwargs`` of an option with its help as plain text and, for an output, the rule."""
        help_text = kwargs.get("help")
        if isinstance(help_text, str) and help_text is not argparse.SUPPRESS:
            help_text = plain_text(help_text)
            if self._output_kind(flags, kwargs) is not None and OUTPUT_RULE not in help_text:
                kind = self._output_kind(flags, kwargs)
                rule = OUTPUT_RULE if kind == "file" else f"it and its {OUTPUT_RULE}"
                help_text = f"{help_text}; {rule}" if help_text else rule.capitalize()
            kwargs = {**kwargs, "help": help_text}
        return kwargs

    def note(self, action: argparse.Action) -> argparse.Action:
        """Remember ``action``: an output, a number list, a declared option."""
        self.declared.append(action)
        kind = self._output_kind(tuple(action.option_strings), {"metavar": action.metavar,
                                                               "nargs": action.nargs})  # fmt: skip
        if kind is not None:
            flag = next(o for o in action.option_strings if o in OUTPUT_OPTIONS)
            self.outputs.append((flag, action.dest, kind))
        if isinstance(action.type, NumberList):
            self.number_lists.update(action.option_strings)
        return action

    def _output_kind(self, flags: tuple[Any, ...], kwargs: dict[str, Any]) -> str | None:
        flag = next((f for f in flags if f in OUTPUT_OPTIONS), None)
        if flag is None or kwargs.get("nargs") == 0 or kwargs.get("action") == "store_true":
            return None
        if (self.command_name, flag) in EITHER_OUTPUTS:
            return "either"
        return "folder" if kwargs.get("metavar") == "DIR" else "file"


class _Group:
    """A group of options of a :class:`CommandParser` (mutually exclusive or for help only),
    whose options the parser remembers."""

    def __init__(self, group: Any, parser: CommandParser) -> None:
        self._group, self._parser = group, parser

    def add_argument(self, *args: Any, **kwargs: Any) -> argparse.Action:
        action = self._group.add_argument(*args, **self._parser.prepared(args, kwargs))
        return self._parser.note(action)


class _Commands:
    """The sub-commands of a :class:`CommandParser`, which the parser remembers by name."""

    def __init__(self, action: Any, parser: CommandParser) -> None:
        self._action, self._parser = action, parser

    def add_parser(self, name: str, **kwargs: Any) -> CommandParser:
        if isinstance(kwargs.get("help"), str):
            kwargs["help"] = plain_text(kwargs["help"])
        child = self._action.add_parser(name, **kwargs)
        assert isinstance(child, CommandParser)
        self._parser.commands[name] = child
        self._parser.command_help[name] = str(kwargs.get("help") or "")
        return child


def walk(parser: CommandParser) -> Iterator[CommandParser]:
    """``parser`` and every sub-command under it."""
    yield parser
    for child in parser.commands.values():
        yield from walk(child)


def keep_negative_values(argv: list[str], options: set[str] | frozenset[str]) -> list[str]:
    """``argv`` with ``OPTION VALUE`` written ``OPTION=VALUE`` where OPTION is one of
    ``options`` and VALUE starts with a minus sign and looks like numbers (``--inputs -3,4``):
    argparse would otherwise take VALUE for an option and fail. ``--`` ends the options."""
    out: list[str] = []
    i = 0
    while i < len(argv):
        arg = argv[i]
        if arg == "--":
            out += argv[i:]
            break
        if arg in options and i + 1 < len(argv) and _NEGATIVE_VALUE.fullmatch(argv[i + 1]):
            out.append(f"{arg}={argv[i + 1]}")
            i += 2
            continue
        out.append(arg)
        i += 1
    return out
