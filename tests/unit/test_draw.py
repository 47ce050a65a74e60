"""draw(): a PNG per family at default settings; refuses fabrics too large to read."""
import time

import pytest

from testbed.core.errors import ParamError
from testbed.model import FAMILIES, make_fabric
from testbed.model.draw import MAX_NODES, draw
from testbed.model.families import get

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


@pytest.fixture(scope="module")
def warm(tmp_path_factory):
    """matplotlib's first import and font cache take a second or two: not draw()'s cost."""
    draw(make_fabric("mpft"), tmp_path_factory.mktemp("warm") / "warm.png")


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_draws_default_fabric(family, tmp_path, warm):
    path = tmp_path / f"{family}.png"
    fabric = make_fabric(family)
    start = time.perf_counter()
    out = draw(fabric, path)
    assert time.perf_counter() - start < 1.0     # ~0.15-0.3 s on the dev VM
    assert out == path
    data = path.read_bytes()
    assert data.startswith(PNG_MAGIC) and len(data) > 10_000


def test_single_tor_hpn(tmp_path):
    path = draw(make_fabric("hpn", {"single_tor": True}), tmp_path / "single.png")
    assert path.read_bytes().startswith(PNG_MAGIC)


@pytest.mark.parametrize("family", ["hpn", "mpft"])
def test_refuses_paper_preset(family, tmp_path):
    settings = dict(get(family).budget.presets["paper"], **({"pods": 1} if family == "hpn" else {}))
    fabric = make_fabric(family, settings, emulated=False)
    with pytest.raises(ParamError, match="too large to draw"):
        draw(fabric, tmp_path / "big.png")
    assert not (tmp_path / "big.png").exists()


def test_limit_is_hosts_plus_switches(tmp_path):
    # 2 pods x 1 segment x 150 hosts = 300 hosts, plus 18 switches: over the limit
    fabric = make_fabric("hpn", {"hosts": 150, "radix": 256})
    assert len(fabric.hosts) + len(fabric.switches) > MAX_NODES
    with pytest.raises(ParamError):
        draw(fabric, tmp_path / "x.png")


def _texts(fabric):
    """(text, bounding box in pixels) of every label drawn: names, row labels, legend, title."""
    from matplotlib.text import Text

    from testbed.model.draw import figure
    fig = figure(fabric)
    fig.canvas.draw()                     # the legend and the offsets are placed when drawn
    renderer = fig.canvas.get_renderer()
    return [(t.get_text(), t.get_window_extent(renderer)) for t in fig.findobj(Text)
            if t.get_visible() and t.get_text().strip()]


@pytest.mark.parametrize("family, settings", [
    *((f, {}) for f in sorted(FAMILIES)), ("hpn", "segment"), ("hpn", {"single_tor": True})])
def test_no_two_labels_overlap(family, settings):
    """Issue 40 item 7: the segment picture's names overlapped (its host boxes' two-line names,
    staggered by one line only). Every label, measured as drawn, clear of every other."""
    settings = dict(get(family).presets[settings]) if isinstance(settings, str) else settings
    texts = _texts(make_fabric(family, settings))
    clashes = [(a, b) for i, (a, box) in enumerate(texts) for b, other in texts[i + 1:]
               if box.overlaps(other)]
    assert not clashes


def test_legend_rates_are_plain_numbers():
    """The segment's legend said "3e+03G": rates are written out, with thousands separated."""
    legend = [t for t, _ in _texts(make_fabric("hpn", dict(get("hpn").presets["segment"])))
              if t.startswith("thicker")]
    assert legend == ["thicker = faster: 200G, 3,000G"]
    assert not any("e+" in t for t, _ in _texts(make_fabric("hpn")))


def test_a_host_box_of_one_host_is_named_by_it():
    """Grouped hosts: a last box holding one host is that host, not "+0 more"."""
    names = [t for t, _ in _texts(make_fabric("hpn", dict(get("hpn").presets["segment"])))]
    assert "p0s0h135" in names and not any("+0 more" in t for t in names)
