#!/usr/bin/env python3
"""Writes docs/api/python.md, the Python API reference, from the docstrings, and docs/api/c.md, the C API reference,
from the comments of include/zgpu.h and include/zgpu_meta.h (`make api-docs`).

Every name of zgpu.__all__ and of the public submodules' __all__ (MODULES below): functions with their signature
and docstring, classes with their public methods and properties (those the class itself defines; bases are named),
objects such as zgpu.config with the methods of their class. python/tests/test_api_docs.py fails when a public name
has no docstring or when the file is not what this script writes now.

    python scripts/gen-api-docs.py            # write docs/api/python.md
    python scripts/gen-api-docs.py --check    # exit 1 if it is out of date or a docstring is missing

zgpu is imported from python/ of this checkout (its library: ZGPU_LIB, else build/lib), unless --installed.
"""
from __future__ import annotations

import argparse
import importlib
import inspect
import os
import re
import sys
from pathlib import Path
from typing import Any, Iterator, List, Optional, Tuple

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "docs" / "api" / "python.md"
MODULES = ["zgpu", "zgpu.ome", "zgpu.dask", "zgpu.xarray", "zgpu.zarr", "zgpu.torch"]
# classes that zgpu's functions make (open_array, Group.create_array, Array.read, iter_slabs...): their constructor's
# parameters are internal handles, so the reference shows none
MADE_BY_ZGPU = {"zgpu.Array", "zgpu.Group", "zgpu.DeviceArray", "zgpu.Attributes", "zgpu.SlabIterator"}
# special methods worth listing when a class defines them with a docstring (the rest are protocol plumbing)
DUNDERS = ("__getitem__", "__setitem__", "__len__", "__iter__", "__contains__", "__enter__", "__exit__",
           "__array__", "__dlpack__", "__dlpack_device__", "__cuda_array_interface__", "__reduce__")


def _doc(obj: Any) -> str:
    """The object's own docstring, dedented ("" when it has none: inherited ones do not count)."""
    doc = obj.__doc__ if isinstance(getattr(obj, "__doc__", None), str) else None
    if isinstance(obj, type) and doc is not None and doc is getattr(obj.__mro__[1], "__doc__", None):
        doc = None  # a class without a docstring of its own shows its base's
    return inspect.cleandoc(doc) if doc else ""


def _default(value: Any) -> str:
    if type(value) is object:  # a sentinel: "not given"
        return "<unset>"
    text = repr(value)
    # an object's address changes from run to run: never let it into the file
    return re.sub(r" at 0x[0-9a-fA-F]+", "", text)


def _annotation(ann: Any) -> str:
    if isinstance(ann, str):  # `from __future__ import annotations`: the source text, less private aliases' "_"
        return re.sub(r"(?<![\w.])_([A-Z]\w*)", r"\1", ann)
    if isinstance(ann, type):
        return ann.__qualname__ if ann.__module__ == "builtins" else "%s.%s" % (ann.__module__, ann.__qualname__)
    return repr(ann).replace("typing.", "")


def signature(obj: Any, skip_first: bool = False) -> str:
    """`(a: int, *, b: str = 'x') -> T` from the annotations as written in the source."""
    try:
        sig = inspect.signature(obj)
    except (TypeError, ValueError):
        return "(...)"
    parts: List[str] = []
    params = list(sig.parameters.values())
    if skip_first and params:
        params = params[1:]
    saw_kwonly = False
    for i, p in enumerate(params):
        if p.kind == p.KEYWORD_ONLY and not saw_kwonly:
            saw_kwonly = True
            parts.append("*")
        if p.kind == p.VAR_POSITIONAL:
            saw_kwonly = True
        text = {p.VAR_POSITIONAL: "*", p.VAR_KEYWORD: "**"}.get(p.kind, "") + p.name
        if p.annotation is not p.empty:
            text += ": " + _annotation(p.annotation)
        if p.default is not p.empty:
            text += (" = " if p.annotation is not p.empty else "=") + _default(p.default)
        parts.append(text)
        if p.kind == p.POSITIONAL_ONLY and (i + 1 == len(params) or params[i + 1].kind != p.POSITIONAL_ONLY):
            parts.append("/")
    out = "(" + ", ".join(parts) + ")"
    if sig.return_annotation is not sig.empty:
        out += " -> " + _annotation(sig.return_annotation)
    return out


def _markdown(doc: str) -> str:
    """A docstring as Markdown: runs of `>>>` examples (with their `...` and output lines) and indented blocks
    become fenced code; the prose stays as written (its ``literals`` render as code)."""
    lines = doc.splitlines()
    out: List[str] = []
    i = 0
    while i < len(lines):
        line = lines[i]
        stripped = line.lstrip()
        if stripped.startswith(">>>") or (line.startswith("    ") and stripped and (not out or out[-1] == "")):
            block = []
            indent = len(line) - len(stripped)
            while i < len(lines) and (lines[i].strip() == "" or len(lines[i]) - len(lines[i].lstrip()) >= indent):
                if lines[i].strip() == "" and (i + 1 >= len(lines) or not lines[i + 1].startswith(" " * indent)):
                    break
                block.append(lines[i][indent:])
                i += 1
            fence = "```python" if block and block[0].lstrip().startswith(">>>") else "```"
            out += [fence] + block + ["```"]
            continue
        line = re.sub(r":(?:func|meth|class|attr|mod|data|exc):`~?([^`]+)`", r"`\1`", line)
        stripped = line.lstrip()
        if PARAM.match(line):  # "name: what it is" (docstrings' parameter lists) as a list item
            if out and out[-1] != "" and not LIST_ITEM.match(out[-1]) and not out[-1].startswith("  "):
                out.append("")
            line = "- " + line
        elif out and LIST_ITEM.match(out[-1]) or (out and out[-1].startswith("  ") and stripped):
            line = "  " + stripped if stripped else line  # the item's continuation
        out.append(line)
        i += 1
    return "\n".join(out).strip()


PARAM = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(?:, [A-Za-z_][A-Za-z0-9_]*)*(?: \([^)]*\))?: \S")
LIST_ITEM = re.compile(r"^- ")


class Reference:
    def __init__(self) -> None:
        self.lines: List[str] = []
        self.missing: List[str] = []

    def emit(self, *lines: str) -> None:
        self.lines.extend(lines)

    def body(self, qualname: str, obj: Any, required: bool = True) -> None:
        doc = _doc(obj)
        if not doc:
            if required:
                self.missing.append(qualname)
            doc = "*(no docstring)*"
        self.emit(_markdown(doc), "")

    # ---- members ---------------------------------------------------------------------------------------------
    @staticmethod
    def members(cls: type) -> Iterator[Tuple[str, Any]]:
        """Public members the class itself defines, in source order."""
        for name, value in list(vars(cls).items()):
            if name.startswith("_") and not (name in DUNDERS and _doc(value)):
                continue
            yield name, value

    def member(self, owner: str, cls: type, name: str, value: Any) -> None:
        qual = "%s.%s" % (owner, name)
        required = not name.startswith("_")
        if isinstance(value, property):
            ann = ""
            if value.fget is not None:
                ret = inspect.signature(value.fget).return_annotation
                ann = "" if ret is inspect.Signature.empty else " → `%s`" % _annotation(ret)
            kind = "property" if value.fset is None else "property, settable"
            self.emit("#### `%s`" % qual, "", "*%s*%s" % (kind, ann), "")
            self.body(qual, value.fget if value.fget is not None else value, required)
        elif isinstance(value, (staticmethod, classmethod)):
            fn = value.__func__
            self.emit("#### `%s%s`" % (qual, signature(fn, skip_first=isinstance(value, classmethod))), "",
                      "*%s*" % type(value).__name__, "")
            self.body(qual, fn, required)
        elif inspect.isfunction(value):
            self.emit("#### `%s%s`" % (qual, signature(value, skip_first=True)), "")
            self.body(qual, value, required)
        elif isinstance(value, type):
            self.emit("#### class `%s`" % qual, "")
            self.body(qual, value, required)
        elif not callable(value):
            ann = getattr(cls, "__annotations__", {}).get(name)
            self.emit("#### `%s`%s" % (qual, ": `%s`" % _annotation(ann) if ann else ""), "",
                      "*attribute*, `%s`" % _default(value) if not hasattr(value, "__dict__") else "*attribute*",
                      "")
        else:
            self.emit("#### `%s%s`" % (qual, signature(value)), "")
            self.body(qual, value, required)

    # ---- top-level names -------------------------------------------------------------------------------------
    def klass(self, qual: str, cls: type) -> None:
        made = issubclass(cls, BaseException) or qual in MADE_BY_ZGPU
        sig = "" if made else re.sub(r" -> None$", "", signature(cls))
        self.emit("### class `%s%s`" % (qual, sig), "")
        bases = [b for b in cls.__bases__ if b is not object]
        if bases:
            self.emit("Bases: " + ", ".join("`%s`" % _qualname(b) for b in bases), "")
        self.body(qual, cls)
        for name, value in self.members(cls):
            self.member(qual, cls, name, value)

    def name(self, module: str, name: str, obj: Any) -> None:
        qual = "%s.%s" % (module, name)
        if inspect.ismodule(obj):
            self.emit("### module `%s`" % qual, "", "See [%s](#%s) below." % (obj.__name__, _anchor(obj.__name__)),
                      "")
        elif isinstance(obj, type):
            self.klass(qual, obj)
        elif callable(obj) and (inspect.isfunction(obj) or inspect.isbuiltin(obj)):
            self.emit("### `%s%s`" % (qual, signature(obj)), "")
            self.body(qual, obj)
        else:  # an object (zgpu.config): its class's docstring and methods, under the object's name
            cls = type(obj)
            self.emit("### `%s`" % qual, "", "*instance of* `%s`" % _qualname(cls), "")
            self.body(qual, cls)
            for mname, value in self.members(cls):
                self.member(qual, cls, mname, value)

    def module(self, modname: str) -> None:
        mod = importlib.import_module(modname)
        self.emit("## %s" % modname, "")
        self.body(modname, mod)
        names = getattr(mod, "__all__", None)
        if names is None:
            self.missing.append(modname + ".__all__")
            return
        for name in names:
            self.name(modname, name, getattr(mod, name))


# Classes whose name depends on what is installed: the reference reads the same with PyTorch and without it (where
# zgpu.torch defines a stand-in IterableDataset).
STABLE_NAMES = {("torch.utils.data.dataset", "IterableDataset"): "torch.utils.data.IterableDataset",
                ("zgpu.torch", "IterableDataset"): "torch.utils.data.IterableDataset"}


def _qualname(cls: type) -> str:
    if cls.__module__ == "builtins":
        return cls.__qualname__
    stable = STABLE_NAMES.get((cls.__module__, cls.__qualname__))
    if stable:
        return stable
    public = {"zgpu.errors": "zgpu", "zgpu.array": "zgpu", "zgpu.group": "zgpu", "zgpu._device": "zgpu",
              "zgpu.attrs": "zgpu", "zgpu._prefetch": "zgpu"}.get(cls.__module__, cls.__module__)
    return "%s.%s" % (public, cls.__qualname__)


def _anchor(title: str) -> str:
    """GitHub's anchor of a heading: lower case, punctuation but - and _ dropped, spaces as -."""
    return re.sub(r"[^a-z0-9 _-]", "", title.lower()).replace(" ", "-")


def generate() -> Tuple[str, List[str]]:
    """The reference's text and the public names that lack a docstring."""
    ref = Reference()
    ref.emit("# Python API reference", "",
             "Generated from the docstrings by `scripts/gen-api-docs.py` (`make api-docs`); do not edit by hand. "
             "`python/tests/test_api_docs.py` fails when it is out of date or a public name lacks a docstring. "
             "Installing: [install.md](../install.md); the C API: [c.md](c.md).", "")
    ref.emit("Modules: " + ", ".join("[%s](#%s)" % (m, _anchor(m)) for m in MODULES) + ".", "",
             "`zgpu.ome` comes with `import zgpu`; the others are imported on their own (`import zgpu.torch`), "
             "and need Dask, xarray, zarr-python or PyTorch as they say.", "")
    for modname in MODULES:
        ref.module(modname)
    return "\n".join(ref.lines).rstrip() + "\n", ref.missing


# ---- the C API: docs/api/c.md from the comments of the public headers ----------------------------------------------
C_OUT = ROOT / "docs" / "api" / "c.md"
C_HEADERS = ["include/zgpu.h", "include/zgpu_meta.h"]  # (zgpu_experimental.h: unstable, docs/tuning.md)


def _comment_text(lines: List[str]) -> str:
    """The text of a C comment's lines, its /*, /**, * and */ markers removed, dedented."""
    out = []
    for line in lines:
        t = re.sub(r"^\s*/\*\*?", "", line.rstrip())
        t = re.sub(r"\*/\s*$", "", t)
        t = re.sub(r"^\s*\* ?", "", t) if not line.lstrip().startswith("/*") else t.lstrip()
        out.append(t.rstrip())
    return inspect.cleandoc("\n".join(out))


def _c_markdown(text: str) -> str:
    """A header comment as Markdown: its " - " lists stay lists, the rest is prose with its line breaks kept as
    paragraphs would join them."""
    out = []
    for line in text.splitlines():
        if re.match(r"^\s*- ", line):
            out.append(line.strip())
        elif not out or not line.startswith(" "):
            out.append(line)
        else:
            out.append("  " + line.strip())
    return "\n".join(out).strip()


def generate_c() -> str:
    """docs/api/c.md: each public header's sections (its banner comments), and in them every function, type and
    constant with the comment above it and its declaration."""
    md = ["# C API reference", "",
          "Generated from the comments of the public headers by `scripts/gen-api-docs.py` (`make api-docs`); do not "
          "edit by hand. The headers are the source: `include/zgpu.h` (the stable API) and `include/zgpu_meta.h` "
          "(metadata builders). `include/zgpu_experimental.h`, the unstable tuning struct, is described in "
          "[docs/tuning.md](../tuning.md). The Python API: [python.md](python.md).", ""]
    for header in C_HEADERS:
        lines = (ROOT / header).read_text().splitlines()
        md += ["## %s" % header, ""]
        doc: Optional[str] = None
        i = 0
        first = True
        while i < len(lines):
            line = lines[i]
            st = line.strip()
            if st.startswith("/*"):  # a comment: the file's, a banner (a section), or the next declaration's
                j = i
                while "*/" not in lines[j]:
                    j += 1
                block = lines[i:j + 1]
                i = j + 1
                if first:
                    md += [_c_markdown(_comment_text(block)), ""]
                    first = False
                elif st.startswith("/* ---"):
                    text = _comment_text([b for b in block if "-----" not in b])
                    title, _, rest = text.partition("\n")
                    title, _, lead = (re.split(r"(: |\. )", title, maxsplit=1) + ["", ""])[:3]
                    md += ["### %s" % title.rstrip(".").strip(), ""]
                    body = (lead[:1].upper() + lead[1:] + "\n" + rest).strip()
                    if body:
                        md += [_c_markdown(body), ""]
                else:
                    doc = _c_markdown(_comment_text(block))
                continue
            first = False
            m = re.match(r"^typedef (enum|struct) (\w+) \{", st)
            if st.startswith("ZGPU_API") or m:
                j = i
                end = re.compile(r"^\}\s*\w+;") if m else re.compile(r";\s*(/\*.*)?$")
                while not end.search(lines[j].strip() if m else lines[j]):
                    j += 1
                decl = "\n".join(lines[i:j + 1])
                name = m.group(2) if m else re.search(r"(\w+)\s*\(", decl).group(1)
                md += ["#### `%s`" % name, ""]
                if doc:
                    md += [doc, ""]
                md += ["```c", decl, "```", ""]
                doc = None
                i = j + 1
                continue
            m = re.match(r"^typedef struct (\w+) \1;", st)
            if m:
                md += ["#### `%s`" % m.group(1), "", (doc + "\n\n" if doc else "") + "An opaque handle.", ""]
                doc = None
            elif re.match(r"^#define ZGPU_\w+ ", st) and not st.startswith("#define ZGPU_API"):
                j = i
                while j + 1 < len(lines) and re.match(r"^#define ZGPU_\w+ ", lines[j + 1].strip()):
                    j += 1
                names = [re.match(r"#define (\w+)", l.strip()).group(1) for l in lines[i:j + 1]]
                md += ["#### %s" % ", ".join("`%s`" % n for n in names), ""]
                if doc:
                    md += [doc, ""]
                md += ["```c"] + lines[i:j + 1] + ["```", ""]
                doc = None
                i = j + 1
                continue
            i += 1
    return "\n".join(md).rstrip() + "\n"


def _import_zgpu(installed: bool) -> None:
    if not installed:
        sys.path.insert(0, str(ROOT / "python"))
        if not os.environ.get("ZGPU_LIB") and (ROOT / "build" / "lib" / "libzgpu.so").exists():
            os.environ["ZGPU_LIB"] = str(ROOT / "build" / "lib" / "libzgpu.so")
    import zgpu  # noqa: F401


def main(argv: Optional[List[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--check", action="store_true", help="compare with the file instead of writing it")
    ap.add_argument("--installed", action="store_true", help="document the zgpu that `import zgpu` finds")
    ap.add_argument("-o", "--output", type=Path, default=OUT)
    args = ap.parse_args(argv)
    _import_zgpu(args.installed)
    text, missing = generate()
    c_text = generate_c()
    for name in missing:
        print("no docstring: %s" % name, file=sys.stderr)
    if args.check:
        stale = [str(path) for path, want in ((args.output, text), (C_OUT, c_text))
                 if not path.exists() or path.read_text() != want]
        for path in stale:
            print("%s is out of date: run make api-docs" % path, file=sys.stderr)
        return 1 if missing or stale else 0
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(text)
    C_OUT.write_text(c_text)
    print("wrote %s (%d lines; %d names without a docstring) and %s (%d lines)"
          % (args.output, text.count("\n"), len(missing), C_OUT, c_text.count("\n")))
    return 1 if missing else 0


if __name__ == "__main__":
    sys.exit(main())
