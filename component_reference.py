"""The component reference (docs/components.md), generated from the component modules.

Owns reading every `pulumi.ComponentResource` under components/ with its `<Name>Args` dataclass
(by parsing the source: field names, types, defaults and the docstring under each field; the
component's type token, summary and documented output attributes) and rendering one section per
component: a usage snippet with the required arguments, an inputs table and an outputs table.
`python -m component_reference` rewrites the file; a test fails when it is out of date or when an
input or output has no description.
"""

from __future__ import annotations

import ast
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent
COMPONENTS_DIR = ROOT / "components"
DOC = ROOT / "docs" / "components.md"
REQUIRED = "required"


@dataclass(frozen=True)
class Attribute:
    name: str
    type: str
    default: str
    """The default's source text, or REQUIRED."""
    description: str


@dataclass(frozen=True)
class Component:
    name: str
    module: str
    type_token: str
    summary: str
    inputs: tuple[Attribute, ...]
    outputs: tuple[Attribute, ...]


def _documented(body: list[ast.stmt], source: str) -> list[Attribute]:
    """Annotated class attributes with the string literal that follows each (its docstring)."""
    attributes = []
    for index, node in enumerate(body):
        if not isinstance(node, ast.AnnAssign) or not isinstance(node.target, ast.Name):
            continue
        following = body[index + 1] if index + 1 < len(body) else None
        description = ""
        if (
            isinstance(following, ast.Expr)
            and isinstance(following.value, ast.Constant)
            and isinstance(following.value.value, str)
        ):
            description = " ".join(following.value.value.split())
        default = REQUIRED if node.value is None else ast.get_source_segment(source, node.value) or ""
        attributes.append(
            Attribute(
                name=node.target.id,
                type=ast.get_source_segment(source, node.annotation) or "",
                default=" ".join(default.split()),
                description=description,
            )
        )
    return attributes


def _type_token(cls: ast.ClassDef) -> str:
    for node in ast.walk(cls):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "__init__"
            and isinstance(node.func.value, ast.Call)
            and isinstance(node.func.value.func, ast.Name)
            and node.func.value.func.id == "super"
            and node.args
            and isinstance(node.args[0], ast.Constant)
        ):
            return str(node.args[0].value)
    return ""


def _is_component(cls: ast.ClassDef) -> bool:
    return any(ast.unparse(base) == "pulumi.ComponentResource" for base in cls.bases)


def read_components(directory: Path = COMPONENTS_DIR) -> list[Component]:
    """Every component of the directory, sorted by name."""
    found = []
    for path in sorted(directory.glob("*.py")):
        source = path.read_text(encoding="utf-8")
        tree = ast.parse(source)
        classes = {node.name: node for node in tree.body if isinstance(node, ast.ClassDef)}
        for cls in classes.values():
            if not _is_component(cls):
                continue
            args = classes.get(f"{cls.name}Args")
            token = _type_token(cls)
            summary = (ast.get_docstring(cls) or "").split("\n\n")[0].replace("\n", " ")
            found.append(
                Component(
                    name=cls.name,
                    module=f"components/{path.name}",
                    type_token=token,
                    summary=summary.replace(f" (`{token}`)", ""),
                    inputs=tuple(_documented(args.body, source)) if args else (),
                    outputs=tuple(_documented(cls.body, source)),
                )
            )
    return sorted(found, key=lambda c: c.name)


def undocumented(components: list[Component]) -> list[str]:
    """`Component.input` / `Component.output` names that have no description."""
    return [
        f"{c.name}.{kind}:{a.name}"
        for c in components
        for kind, attributes in (("input", c.inputs), ("output", c.outputs))
        for a in attributes
        if not a.description
    ]


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def _usage(component: Component) -> list[str]:
    required = [a.name for a in component.inputs if a.default == REQUIRED]
    arguments = "".join(f"        {name}=...,\n" for name in required)
    module = component.module.removesuffix(".py").replace("/", ".")
    return [
        "```python",
        f"from {module} import {component.name}, {component.name}Args",
        "",
        f'{component.name}(\n    "name",\n    {component.name}Args(\n{arguments}    ),\n)',
        "```",
    ]


def render(components: list[Component]) -> str:
    lines = [
        "# Components",
        "",
        "Generated from the component modules by `python -m component_reference`; a test keeps it in",
        "step and fails when an input or output has no description. Each component takes one typed",
        "`<Name>Args` and registers its children under its own type token.",
        "",
    ]
    lines += [f"- [{c.name}](#{c.name.lower()}) (`{c.module}`)" for c in components]
    for c in components:
        lines += ["", f"## {c.name}", "", f"`{c.type_token}`: {c.summary}", "", *_usage(c), ""]
        lines += ["| input | type | default | description |", "| --- | --- | --- | --- |"]
        lines += [
            f"| `{a.name}` | `{_cell(a.type)}` | {'required' if a.default == REQUIRED else f'`{_cell(a.default)}`'} "
            f"| {_cell(a.description)} |"
            for a in c.inputs
        ]
        lines += ["", "| output | type | description |", "| --- | --- | --- |"]
        lines += [f"| `{a.name}` | `{_cell(a.type)}` | {_cell(a.description)} |" for a in c.outputs]
    return "\n".join(lines) + "\n"


def main() -> int:
    components = read_components()
    missing = undocumented(components)
    if missing:
        print("no description for: " + ", ".join(missing), file=sys.stderr)
        return 1
    DOC.write_text(render(components), encoding="utf-8")
    print(f"wrote {DOC.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
