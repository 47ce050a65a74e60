"""What a fabric family is: one object that answers everything the testbed asks of a family.

A family module (hpn.py, mpft.py, ...) exports one `Family`; families/__init__.py registers it.
Nothing outside the object tests a family's name: drawing, placement, budgets, presets and the
routing default ask the object instead. The answers:

  params        the typed, ranged parameter class (testbed.model.params.Params)
  build         params -> the pure Fabric (checked by arithmetic first, see `make`)
  unit          placement: the unit a switch or host belongs to (whole units go to one server,
                so host links are never cut), None for the top tier
  presets       named shapes to emulate (`--preset NAME` on topo show, up, run)
  budget        full-scale port budget (`topo budget`), or None: paper-scale presets counted,
                never emulated
  default_core  how core switches forward unless `routing core=` says (policies/options.py)
  group         drawing: the (number, legend label) a switch is coloured by, None when shared
  shared        drawing: the legend label of the shared switches and links
  title         drawing: the parameters shown in the picture's title

Emulated presets and budget presets are two mappings on purpose: an emulated preset must come
up on this machine (limits.py's emulator limit, Mininet's interface names), a budget preset is
the paper's full scale (tens of thousands of links), built as objects only and counted.
"""
from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from testbed.core.errors import ParamError
from testbed.model import limits
from testbed.model.fabric import Fabric, Switch
from testbed.model.params import Params, make_params


@dataclass(frozen=True)
class Budget:
    """A family's full-scale port budget: the claims it counts, the presets it counts them on
    (never emulated) and the counter (Fabric -> {claim: {key: entry}}, testbed.model.budget)."""
    claims: tuple[str, ...]
    presets: Mapping[str, Mapping[str, object]]
    count: Callable[[Fabric], dict]


def by_pod(fab: Fabric, switch: Switch) -> tuple[int, str] | None:
    """The default drawing group: a switch's pod (clos3 and anything else with pods)."""
    return None if switch.pod is None else (switch.pod, f"pod {switch.pod}")


def all_but_scale(params: Params) -> dict[str, object]:
    """The default picture title: every parameter but the rate scale."""
    return {k: v for k, v in dataclasses.asdict(params).items() if k != "scale"}


@dataclass(frozen=True)
class Family:
    """A fabric family: its name, its typed and ranged parameters (a Params subclass), `build`
    (parameters -> Fabric, pure), `unit` (the placement unit of a node) and the answers the
    testbed asks of it (presets, budget, default core mode); registered with `register`."""
    name: str
    params: type[Params]
    build: Callable[[Params], Fabric]
    unit: Callable[[Fabric, str], str | None]
    presets: Mapping[str, Mapping[str, object]] = field(default_factory=dict)
    budget: Budget | None = None
    default_core: str = "ecmp"
    group: Callable[[Fabric, Switch], tuple[int, str] | None] = by_pod
    shared: str = "planes / rails"
    title: Callable[[Params], dict[str, object]] = all_but_scale
    origin: str | None = None   # the file a family was loaded from (families.load); None: built in

    def make(self, settings=None, emulated: bool = True) -> Fabric:
        """The fabric of this family with `settings` ({key: value} or ["key=value"]), validated.

        The parameters are checked, then the fabric's size and ports by arithmetic (limits.py),
        and only then is it built. emulated=False takes the model's larger size limit instead of
        the emulator's and skips the limits only Mininet has (interface names, slowest rate),
        for paper-scale budgets.
        """
        params = make_params(self.params, settings)
        limits.check(params, emulated)      # from the parameters alone: nothing built yet
        fabric = self.build(params)
        fabric.validate(emulated)
        return fabric

    def preset(self, name: str | None) -> dict[str, object]:
        """The settings of emulated preset `name` ({} for None); ParamError naming the choices."""
        if name is None:
            return {}
        if name not in self.presets:
            raise ParamError(f"no preset {name!r} for {self.name}; " + (
                f"choose from {', '.join(self.presets)}" if self.presets else "it has none"))
        return dict(self.presets[name])


ANSWERS = ("build", "unit", "group", "title")      # the answers that are functions


def check(family, known: Mapping[str, Family]) -> None:
    """ParamError (one line) unless `family` can be registered beside `known`."""
    if not isinstance(family, Family):
        raise ParamError(f"register: expected a Family, got {type(family).__name__}")
    name = family.name
    if not isinstance(name, str) or not name.isidentifier() or name != name.lower():
        raise ParamError(f"register: family name {name!r} must be a lower-case identifier")
    if name in known:
        raise ParamError(f"register: a family named {name!r} is already registered")
    if not (isinstance(family.params, type) and issubclass(family.params, Params)):
        raise ParamError(f"register {name}: params must be a Params subclass")
    if getattr(family.params, "family", None) != name:
        raise ParamError(f"register {name}: its params class says family "
                         f"{getattr(family.params, 'family', None)!r}")
    missing = [a for a in ANSWERS if not callable(getattr(family, a))]
    if family.budget is not None and not (isinstance(family.budget, Budget)
                                          and callable(family.budget.count)):
        missing.append("budget")
    if missing:
        raise ParamError(f"register {name}: no answer for {', '.join(missing)}")
    fields = {f.name for f in dataclasses.fields(family.params)}
    shapes = {**family.presets, **(family.budget.presets if family.budget else {})}
    for preset, settings in shapes.items():
        unknown = sorted(set(settings) - fields)
        if unknown:
            raise ParamError(f"register {name}: preset {preset!r} sets unknown parameter {unknown[0]!r}")
