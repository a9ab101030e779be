"""Case names: `Family/variant/.../key:value` split into variants and parameters, and read by axis
with name_schema.txt (the shapes every family's names take; xfbench's own tests check every listed
name against the same file)."""

import os


def parse_name(name):
    """`Family/a/b/key:v/...` -> (family, [a, b], {key: v}). Values stay strings."""
    parts = name.split("/")
    variants, params = [], {}
    for p in parts[1:]:
        if ":" in p:
            k, v = p.split(":", 1)
            params[k] = v
        else:
            variants.append(p)
    return parts[0], variants, params


# The shapes of case names (name_schema.txt beside this file; its header gives the grammar):
# the same file xfbench's tests check every listed name against.
_SCHEMA_FILE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "name_schema.txt")


def parse_name_schema(text):
    """name_schema.txt's text -> [(family, [(items, optional)])], items as (axis, literal, keyed)."""
    shapes = []
    for line in text.splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        words = line.split()
        groups, in_group = [], False
        for w in words[1:]:
            opens, closes = w.startswith("["), w.endswith("]")
            w = w.strip("[]")
            if opens:
                groups.append(([], True))
                in_group = True
            if not in_group:
                groups.append(([], False))
            if w.endswith(":"):
                item = (w[:-1], None, True)
            elif "=" in w:
                item = (w.split("=", 1)[0], w.split("=", 1)[1], False)
            else:
                item = (w, None, False)
            groups[-1][0].append(item)
            if closes:
                in_group = False
        shapes.append((words[0], groups))
    return shapes


def _match(groups, g, tokens, t):
    """The axes of tokens[t:] by groups[g:], or None."""
    if g == len(groups):
        return {} if t == len(tokens) else None
    items, optional = groups[g]
    if t + len(items) <= len(tokens):
        axes = {}
        for (axis, literal, keyed), tok in zip(items, tokens[t:t + len(items)]):
            key, colon, value = tok.partition(":")
            if keyed and colon and key == axis:
                axes[axis] = value
            elif not keyed and not colon and (literal is None or tok == literal):
                axes[axis] = tok
            else:
                break
        else:
            rest = _match(groups, g + 1, tokens, t + len(items))
            if rest is not None:
                return {**axes, **rest}
    return _match(groups, g + 1, tokens, t) if optional else None


_SHAPES = None


def name_axes(name, shapes=None):
    """A case name's axes by the first shape of its family it matches ({'backend': 'fused',
    'seq': '512', ...}: values stay strings), or None when no shape takes it."""
    global _SHAPES
    if shapes is None:
        if _SHAPES is None:
            with open(_SCHEMA_FILE) as f:
                _SHAPES = parse_name_schema(f.read())
        shapes = _SHAPES
    family, *tokens = name.split("/")
    for fam, groups in shapes:
        if fam == family:
            axes = _match(groups, 0, tokens, 0)
            if axes is not None:
                return axes
    return None


def as_number(v):
    """'8192' -> 8192, '1.5' -> 1.5, other strings unchanged (for sorting axes numerically)."""
    try:
        return int(v)
    except (TypeError, ValueError):
        try:
            return float(v)
        except (TypeError, ValueError):
            return v
