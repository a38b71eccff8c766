"""The decision tree of the report, drawn as boxes and edges."""

from __future__ import annotations

from h2lab.analysis.tree import TreeNode
from h2lab.report.svg.frame import LABEL_COLOURS, esc, num, shorten, svg_root

NODE_W, NODE_H, LEVEL_H, GAP = 156.0, 46.0, 86.0, 14.0


def tree_chart(root: TreeNode, *, title: str = "decision tree") -> str:
    """Boxes (samples, class counts, label) joined by edges labelled with the split's branch
    conditions; leaves are spread left to right, each parent centred over its children."""
    xs: dict[int, float] = {}
    next_leaf = [0]

    def place(node: TreeNode) -> float:
        if node.left is None or node.right is None:
            xs[node.node_id] = next_leaf[0] * (NODE_W + GAP) + NODE_W / 2 + 10
            next_leaf[0] += 1
        else:
            xs[node.node_id] = (place(node.left) + place(node.right)) / 2
        return xs[node.node_id]

    place(root)
    nodes = list(root.walk())
    depth = max(n.depth for n in nodes)
    width = next_leaf[0] * (NODE_W + GAP) + 20
    height = (depth + 1) * LEVEL_H + 10
    body: list[str] = []
    for n in nodes:
        if n.split is None or n.left is None or n.right is None:
            continue
        x0, y0 = xs[n.node_id], n.depth * LEVEL_H + 10 + NODE_H
        for child, text in ((n.left, n.split.left_text), (n.right, n.split.right_text)):
            x1, y1 = xs[child.node_id], child.depth * LEVEL_H + 10
            body.append(
                f'<line x1="{num(x0)}" y1="{num(y0)}" x2="{num(x1)}" y2="{num(y1)}" stroke="#666"/>'
                f'<text x="{num(x1)}" y="{num(y1 - 5)}" text-anchor="middle" '
                f'font-size="10px" fill="#333" stroke="#fff" stroke-width="3" '
                f'paint-order="stroke">{esc(shorten(text, 28))}</text>'
            )
    for n in nodes:
        cx, y0 = xs[n.node_id], n.depth * LEVEL_H + 10
        counts = ", ".join(f"{c} {k}" for c, k in n.class_counts.items() if k)
        body.append(
            f'<g><rect x="{num(cx - NODE_W / 2)}" y="{num(y0)}" width="{num(NODE_W)}" '
            f'height="{num(NODE_H)}" rx="5" fill="{LABEL_COLOURS[n.label]}" stroke="#555"/>'
            f'<text x="{num(cx)}" y="{num(y0 + 17)}" text-anchor="middle" font-weight="bold">'
            f"{esc(n.label)}</text>"
            f'<text x="{num(cx)}" y="{num(y0 + 34)}" text-anchor="middle">'
            f"{esc(shorten(f'{n.n_samples} cells: {counts}', 30))}</text></g>"
        )
    return svg_root(width, height, body, title)
