"""MiniMars: a small crafting world with hidden regions and counter-commonsense recipes.

A stand-in for the paper's Mars benchmark (Crafter with modified rules). The map is a graph of
regions; the agent sees only the region it stands in (partial observability) and must explore to find
iron and diamond. Every world draws a few *modifications* of the default Crafter tech tree (more wood
for a pickaxe, coal instead of stone, a sword instead of a pickaxe to mine stone, a furnace instead
of a table...). The default recipes are the "LLM prior": what a model pre-trained on Minecraft/Crafter
text believes, correct in the default world and wrong exactly where the world was modified.
"""
from __future__ import annotations

import random
from collections import deque
from dataclasses import dataclass, field

from ..runtime import check_int

__all__ = ["RESOURCES", "TOOLS", "STATIONS", "ITEMS", "CRAFT_ACTIONS", "GOAL", "Recipe", "DEFAULT_RECIPES",
           "World", "sample_world", "succeeds", "obtainable", "MiniMars", "check_action"]

RESOURCES = ("wood", "sapling", "stone", "coal", "iron", "diamond")
TOOLS = ("wood_pickaxe", "wood_sword", "stone_pickaxe", "stone_sword", "iron_pickaxe")
STATIONS = ("table", "furnace")
ITEMS = RESOURCES + TOOLS
CRAFT_ACTIONS = (tuple(f"collect_{r}" for r in RESOURCES) + tuple(f"place_{s}" for s in STATIONS)
                 + tuple(f"make_{t}" for t in TOOLS))
GOAL = "diamond"


@dataclass(frozen=True)
class Recipe:
    """Preconditions and effect of one action: consumed items, held tools, things that must be near."""

    consumes: tuple[tuple[str, int], ...] = ()
    requires: tuple[str, ...] = ()
    near: tuple[str, ...] = ()

    def need(self) -> dict[str, int]:
        """Inventory minimum implied by the recipe: consumed quantities and one of each tool."""
        need = dict(self.consumes)
        for t in self.requires:
            need[t] = max(need.get(t, 0), 1)
        return need


def _r(consumes=None, requires=(), near=()):
    return Recipe(tuple(sorted((consumes or {}).items())), tuple(requires), tuple(near))


# Default Crafter tech tree: the prior knowledge of a Minecraft-literate LLM.
DEFAULT_RECIPES: dict[str, Recipe] = {
    "collect_wood": _r(near=["wood"]),
    "collect_sapling": _r(near=["sapling"]),
    "collect_stone": _r(requires=["wood_pickaxe"], near=["stone"]),
    "collect_coal": _r(requires=["wood_pickaxe"], near=["coal"]),
    "collect_iron": _r(requires=["stone_pickaxe"], near=["iron"]),
    "collect_diamond": _r(requires=["iron_pickaxe"], near=["diamond"]),
    "place_table": _r({"wood": 1}),
    "place_furnace": _r({"stone": 1}, near=["table"]),
    "make_wood_pickaxe": _r({"wood": 1}, near=["table"]),
    "make_wood_sword": _r({"wood": 1}, near=["table"]),
    "make_stone_pickaxe": _r({"wood": 1, "stone": 1}, near=["table"]),
    "make_stone_sword": _r({"wood": 1, "stone": 1}, near=["table"]),
    "make_iron_pickaxe": _r({"wood": 1, "coal": 1, "iron": 1}, near=["table", "furnace"]),
}


def check_action(action: str, n_regions: int | None = None) -> str:
    """Validate an action name: a crafting action or ``move_<region>``."""
    if not isinstance(action, str):
        raise TypeError(f"action must be a str, got {type(action).__name__}")
    if action in CRAFT_ACTIONS:
        return action
    if action.startswith("move_") and action[5:].isdigit():
        if n_regions is not None and not 0 <= int(action[5:]) < n_regions:
            raise ValueError(f"action {action!r} names a region outside 0..{n_regions - 1}")
        return action
    raise ValueError(f"action must be one of {CRAFT_ACTIONS} or 'move_<region>', got {action!r}")


def succeeds(recipes: dict[str, Recipe], inventory: dict[str, int], near, action: str) -> bool:
    """Whether ``action`` succeeds under ``recipes`` in state (inventory, near): the success flag."""
    r = recipes[action]
    return (all(inventory.get(i, 0) >= q for i, q in r.need().items())
            and all(s in near for s in r.near))


def producer(item: str) -> str:
    """The action that yields ``item`` (collect a resource, make a tool, place a station)."""
    if item in RESOURCES:
        return f"collect_{item}"
    if item in TOOLS:
        return f"make_{item}"
    if item in STATIONS:
        return f"place_{item}"
    raise ValueError(f"item must be one of {ITEMS + STATIONS}, got {item!r}")


def obtainable(recipes: dict[str, Recipe]) -> set[str]:
    """Items/stations reachable from an empty inventory (fixpoint; every resource exists on the map)."""
    have: set[str] = set()
    changed = True
    while changed:
        changed = False
        for thing in ITEMS + STATIONS:
            if thing in have:
                continue
            r = recipes[producer(thing)]
            if all(i in have for i in r.need()) and all(s in have or s in RESOURCES for s in r.near):
                have.add(thing)
                changed = True
    return have


@dataclass
class World:
    """A MiniMars world: its true recipes and the list of modifications from the default tree."""

    recipes: dict[str, Recipe]
    modifications: list[str] = field(default_factory=list)
    seed: int = 0

    @property
    def modified_actions(self) -> list[str]:
        return [a for a in CRAFT_ACTIONS if self.recipes[a] != DEFAULT_RECIPES[a]]


def _modify(rng: random.Random, recipes: dict[str, Recipe], kind: str, taken: set[str]):
    crafts = [a for a in CRAFT_ACTIONS if not a.startswith("collect") and a not in taken]
    if kind == "quantity":  # "a wooden pickaxe needs 3 wood"
        a = rng.choice(crafts)
        cons = dict(recipes[a].consumes)
        i = rng.choice(sorted(cons))
        cons[i] = rng.choice([2, 3])
        return a, _r(cons, recipes[a].requires, recipes[a].near), f"{a}: needs {cons[i]} {i}"
    if kind == "ingredient":  # "a stone pickaxe is made of coal, not stone"
        a = rng.choice(crafts)
        cons = dict(recipes[a].consumes)
        old = rng.choice(sorted(cons))
        new = rng.choice([x for x in RESOURCES[:4] if x not in cons])
        cons[new] = cons.pop(old)
        return a, _r(cons, recipes[a].requires, recipes[a].near), f"{a}: uses {new} instead of {old}"
    if kind == "tool":  # "mining stone needs a wooden sword"
        a = rng.choice([x for x in ("collect_stone", "collect_coal", "collect_iron") if x not in taken])
        old = recipes[a].requires[0]
        new = rng.choice([t for t in TOOLS if t != old])
        return a, _r(dict(recipes[a].consumes), [new], recipes[a].near), f"{a}: needs {new} instead of {old}"
    if kind == "station":  # "a stone pickaxe is made at a furnace"
        a = rng.choice([x for x in crafts if "table" in recipes[x].near and "furnace" not in recipes[x].near])
        near = ["furnace" if s == "table" else s for s in recipes[a].near]
        return a, _r(dict(recipes[a].consumes), recipes[a].requires, near), f"{a}: at a furnace, not a table"
    raise ValueError(f"kind must be quantity/ingredient/tool/station, got {kind!r}")


def sample_world(seed: int, n_modifications: int | None = 3) -> World:
    """A random modified world: ``n_modifications`` recipe changes (0 = the default world), all of
    them on the way to the goal or beside it, and the goal still obtainable."""
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise TypeError(f"seed must be an int, got {type(seed).__name__}")
    if (isinstance(n_modifications, bool) or not isinstance(n_modifications, int)
            or not 0 <= n_modifications <= 5):
        raise ValueError(f"n_modifications must be an int in 0..5, got {n_modifications!r}")
    rng = random.Random(seed)
    for _ in range(1000):
        recipes, taken, mods = dict(DEFAULT_RECIPES), set(), []
        for _k in range(n_modifications):
            try:
                a, rec, desc = _modify(rng, recipes, rng.choice(["quantity", "ingredient", "tool", "station"]),
                                       taken)
            except IndexError:
                break
            if rec == recipes[a]:
                break
            recipes[a] = rec
            taken.add(a)
            mods.append(desc)
        if len(mods) == n_modifications and GOAL in obtainable(recipes):
            return World(recipes, mods, seed)
    raise RuntimeError(f"could not sample a solvable world for seed {seed}")  # pragma: no cover


class MiniMars:
    """Gym-like environment: ``reset() -> obs``, ``step(action) -> (obs, reward, done, info)``.

    A fresh map per episode (``episode`` seeds it), the same recipes. ``obs`` holds the current region,
    its neighbours, what is near (resources there and stations placed there) and the inventory. Reward
    is +1 per new achievement (first success of each crafting action, as in Crafter); as in Mars and
    Crafter the episode runs for the whole step budget ``max_steps`` (collecting the diamond does not
    end it; ``end_at_goal=True`` ends it there). ``info["success"]`` is the action's success flag.
    """

    def __init__(self, world: World, episode: int = 0, n_regions: int = 9, max_steps: int = 80,
                 end_at_goal: bool = False):
        if not isinstance(world, World):
            raise TypeError(f"world must be a World, got {type(world).__name__}")
        n_regions = check_int(n_regions, "n_regions", 4)
        max_steps = check_int(max_steps, "max_steps")
        if not isinstance(end_at_goal, bool):
            raise TypeError(f"end_at_goal must be a bool, got {type(end_at_goal).__name__}")
        self.world, self.n_regions, self.max_steps, self.end_at_goal = world, n_regions, max_steps, end_at_goal
        rng = random.Random(world.seed * 7919 + episode)
        # a random tree over the regions plus two chords: connected, with far-away leaves
        self.adj = {k: set() for k in range(n_regions)}
        for k in range(1, n_regions):
            j = rng.randrange(max(0, k - 3), k)
            self.adj[k].add(j)
            self.adj[j].add(k)
        for _ in range(2):
            a, b = rng.sample(range(n_regions), 2)
            self.adj[a].add(b)
            self.adj[b].add(a)
        dist = _bfs(self.adj, 0)
        order = sorted(range(n_regions), key=lambda k: (dist[k], rng.random()))
        self.contents = {k: set() for k in range(n_regions)}
        self.contents[0] |= {"wood", "sapling"}
        for r, lo, n in (("wood", 0, 3), ("sapling", 0, 2), ("stone", 1, 3), ("coal", 1, 2), ("iron", 3, 2),
                         ("diamond", 6, 1)):
            for k in rng.sample(order[min(lo, n_regions - 1):], n):
                self.contents[k].add(r)
        self.reset()

    def reset(self) -> dict:
        self.region, self.t = 0, 0
        self.inventory = {i: 0 for i in ITEMS}
        self.stations = {k: set() for k in range(self.n_regions)}
        self.achievements: set[str] = set()
        return self.observe()

    def near(self) -> frozenset:
        return frozenset(self.contents[self.region] | self.stations[self.region])

    def observe(self) -> dict:
        return {"region": self.region, "neighbors": sorted(self.adj[self.region]), "near": sorted(self.near()),
                "inventory": dict(self.inventory), "t": self.t}

    def step(self, action: str):
        check_action(action, self.n_regions)
        if self.done():
            raise RuntimeError("episode is over; call reset()")
        self.t += 1
        if action.startswith("move_"):
            k = int(action[5:])
            ok = k in self.adj[self.region]
            if ok:
                self.region = k
        else:
            ok = succeeds(self.world.recipes, self.inventory, self.near(), action)
            if ok:
                r = self.world.recipes[action]
                for i, q in r.consumes:
                    self.inventory[i] -= q
                verb, thing = action.split("_", 1)
                if verb == "place":
                    self.stations[self.region].add(thing)
                else:
                    self.inventory[thing] += 1
        reward = 0.0
        if ok and not action.startswith("move_") and action not in self.achievements:
            self.achievements.add(action)
            reward = 1.0
        return self.observe(), reward, self.done(), {"success": ok}

    def done(self) -> bool:
        """The step budget is spent (or, with ``end_at_goal``, the diamond is collected)."""
        return self.t >= self.max_steps or (self.end_at_goal and self.inventory[GOAL] > 0)


def _bfs(adj: dict[int, set[int]], start: int) -> dict[int, int]:
    dist, queue = {start: 0}, deque([start])
    while queue:
        u = queue.popleft()
        for v in sorted(adj[u]):
            if v not in dist:
                dist[v] = dist[u] + 1
                queue.append(v)
    return dist
