"""A host model of hopper's ping-pong consumers (PINGPONG=1), alone or in a multicast pair of CTAs
(CLUSTER_M=2), run under many random interleavings.

The kernel's synchronisation, as the template renders it: in each CTA one producer thread loads every
item's k-steps in order into a ring of STAGES stages: it waits for the stage's `empty` mbarrier, then its
TMA loads complete on the stage's `full` mbarrier, in any order among the loads in flight. Alone, a step
is two loads (A and B); in a pair, both CTAs walk the same items, and each producer loads its own A and
multicasts its half of B into the stage of both CTAs, so a CTA's `full` also completes on its peer's load,
which may land before the CTA's own producer has announced the step's bytes (the transaction count goes
below zero until then). Consumer c takes the CTA's items c, c + 2, ...; before an item it waits for its
turn (named barrier 5 - c: the other consumer has issued its previous item's k-loop), then jumps to the
item's first stage by counting k-steps; in the loop it waits on `full` with the step's parity, keeps one
wgmma batch in flight and releases the stage before (4 warp arrivals on `empty`, in every CTA of the pair:
each stage is refilled by both producers); after the loop it passes the turn (barrier 4 + c) where the
CTA has a next item, then waits for its last batch and releases the last stage. An mbarrier's parity wait
returns once the barrier's phase parity differs from the one asked for, so it cannot tell a phase from the
one two uses later: that is what the model checks, with every read compared against the step each of the
stage's pieces should hold, and no piece of a stage reloaded, in either CTA, while a consumer reads it.

Without the turns (the unordered variant a review removed before it ran) the same model finds stages
read two uses ahead, or hangs; in a pair whose consumers release only their own CTA's stages, it finds a
peer's multicast overwriting a stage still read. The last tests keep the model honest by finding both."""
import random

import pytest


class Mbarrier:
    def __init__(self, count: int):
        self.count, self.pending, self.tx, self.phase = count, count, 0, 0

    def arrive(self) -> None:
        self.pending -= 1
        assert self.pending >= 0, "more arrivals than the barrier's count"
        self._complete()

    def expect_arrive(self, loads: int) -> None:  # mbarrier.arrive.expect_tx
        self.tx += loads
        self.arrive()

    def land(self) -> None:  # complete_tx of one load's bytes
        self.tx -= 1
        self._complete()

    def _complete(self) -> None:
        if self.pending == 0 and self.tx == 0:
            self.phase += 1
            self.pending = self.count

    def passed(self, parity: int) -> bool:  # try_wait.parity: done once the current phase's parity differs
        return self.phase % 2 != parity


class Broken(Exception):
    pass


def run_once(items: int, k_tiles: int, stages: int, ordered: bool, rng: random.Random, ctas: int = 1,
             release_peers: bool = True) -> None:
    # release_peers=False: a consumer releases its own CTA's stage only (a broken pair, for the last test)
    readers = 4 * ctas if release_peers else 4
    full = [[Mbarrier(1) for _ in range(stages)] for _ in range(ctas)]
    empty = [[Mbarrier(readers) for _ in range(stages)] for _ in range(ctas)]
    # the pieces of a stage: A, then B alone or one half of B from each CTA's producer
    pieces = ["A", "B"] if ctas == 1 else ["A", *(f"B{r}" for r in range(ctas))]
    held = [[dict.fromkeys(pieces) for _ in range(stages)] for _ in range(ctas)]  # the step each piece holds
    reading: list[list[set]] = [[set() for _ in range(stages)] for _ in range(ctas)]
    in_flight: list[tuple[int, int, str, int]] = []  # loads not yet landed: (CTA, stage, piece, step)
    turns = [{4: [0, 0], 5: [0, 0]} for _ in range(ctas)]  # per CTA: named barrier -> [threads, completions]

    def load(cta: int, stage: int, piece: str, step: int) -> None:
        if reading[cta][stage]:
            raise Broken(f"stage {stage} of CTA {cta} reloaded ({piece}, step {step}) while steps "
                         f"{reading[cta][stage]} read it")
        in_flight.append((cta, stage, piece, step))

    def producer(r: int):
        stage = phase = 0
        for step in range(items * k_tiles):
            while not empty[r][stage].passed(phase ^ 1):
                yield
            full[r][stage].expect_arrive(len(pieces))
            load(r, stage, "A", step)
            yield
            if ctas == 1:
                load(r, stage, "B", step)
            else:
                for peer in range(ctas):  # the multicast: our half of B into every CTA's stage
                    load(peer, stage, f"B{r}", step)
            yield
            stage, phase = (0, phase ^ 1) if stage + 1 == stages else (stage + 1, phase)

    def sync(r: int, bar: int):  # bar.sync bar, 256 by 128 threads: until the barrier completes
        t = turns[r]
        t[bar][0] += 128
        done = t[bar][1]
        if t[bar][0] == 256:
            t[bar] = [0, done + 1]
        while t[bar][1] == done:
            yield

    def arrive(r: int, bar: int) -> None:  # bar.arrive bar, 256 by 128 threads
        t = turns[r]
        t[bar][0] += 128
        if t[bar][0] > 256:
            raise Broken(f"named barrier {bar} of CTA {r} over-arrived")
        if t[bar][0] == 256:
            t[bar] = [0, t[bar][1] + 1]

    def release(r: int, stage: int):  # 4 warps, each arriving in every CTA of the pair
        for _ in range(4):
            for peer in range(ctas) if release_peers else (r,):
                empty[peer][stage].arrive()
                yield

    def consumer(r: int, c: int):
        for local in range(c, items, 2):
            if ordered and local >= 1:
                yield from sync(r, 5 - c)
            first = local * k_tiles
            stage, phase = first % stages, (first // stages) & 1
            batches: list[tuple[int, int]] = []
            prev = -1
            for step in range(first, first + k_tiles):
                while not full[r][stage].passed(phase):
                    yield
                if set(held[r][stage].values()) != {step}:
                    raise Broken(f"consumer {c} of CTA {r} read stage {stage} for step {step}; it holds "
                                 f"{held[r][stage]}")
                reading[r][stage].add(step)
                batches.append((stage, step))
                yield
                while len(batches) > 1:  # wgmma_wait<1>
                    s, st = batches.pop(0)
                    reading[r][s].discard(st)
                if prev >= 0:
                    yield from release(r, prev)
                prev = stage
                stage, phase = (0, phase ^ 1) if stage + 1 == stages else (stage + 1, phase)
            if ordered and local + 1 < items:
                arrive(r, 4 + c)
            yield
            for s, st in batches:  # wgmma_wait<0>
                reading[r][s].discard(st)
            yield from release(r, prev)
            for _ in range(rng.randrange(6)):  # the epilogue
                yield

    actors = {}
    for r in range(ctas):
        actors.update({(r, "producer"): producer(r), (r, "consumer 0"): consumer(r, 0),
                       (r, "consumer 1"): consumer(r, 1)})
    weights = {name: rng.choice((0.05, 1, 5)) for name in actors}
    tma_weight = rng.choice((0.1, 1, 5))
    for _ in range(200_000):
        if not actors:
            break
        names = [*actors, "tma"]
        who = rng.choices(names, weights=[*(weights[n] for n in actors), tma_weight])[0]
        if who == "tma":
            if in_flight:
                cta, stage, piece, step = in_flight.pop(rng.randrange(len(in_flight)))
                held[cta][stage][piece] = step
                full[cta][stage].land()
            continue
        try:
            next(actors[who])
        except StopIteration:
            del actors[who]
    else:
        raise Broken("hangs")
    if any(arrived for t in turns for arrived, _ in t.values()):
        raise Broken("a named barrier is left half-arrived at exit")
    if in_flight:
        raise Broken("loads still in flight at exit")


def first_failure(ordered: bool, trials: int, ctas: int = 1, release_peers: bool = True) -> str | None:
    for items in range(6):
        for stages in range(2, 8):
            for k_tiles in range(1, 9):
                for trial in range(trials):
                    rng = random.Random(f"{items}-{stages}-{k_tiles}-{trial}-{ctas}")
                    try:
                        run_once(items, k_tiles, stages, ordered, rng, ctas, release_peers)
                    except (Broken, AssertionError) as e:
                        return f"items {items}, stages {stages}, k-steps {k_tiles}: {e}"
    return None


@pytest.mark.parametrize("ctas", [1, 2], ids=["alone", "multicast pair"])
def test_ordered_pingpong_reads_every_stage_it_should_and_ends_clean(ctas):
    """1 to 5 items a CTA (odd counts too), 2-7 stages, 1-8 k-steps an item, random interleavings with a
    slow or fast producer, consumers and TMA (in a pair, each CTA's own): every read finds its step in
    every piece, no stage is reloaded while read, no barrier is over-arrived or left half-arrived, nothing
    hangs."""
    assert first_failure(ordered=True, trials=6 if ctas == 1 else 2, ctas=ctas) is None


@pytest.mark.parametrize("ctas", [1, 2], ids=["alone", "multicast pair"])
def test_the_model_catches_the_unordered_variant(ctas):
    """The variant without turns jumps to a stage whose previous use it cannot tell from its own."""
    failure = first_failure(ordered=False, trials=6, ctas=ctas)
    assert failure is not None and ("read stage" in failure or "hangs" in failure or "reloaded" in failure), failure


def test_the_model_catches_a_pair_that_releases_only_its_own_stages():
    """Each producer then waits for its own consumers only, and its multicast half of B can land in the
    peer's stage while the peer's consumer still reads the stage's previous use."""
    failure = first_failure(ordered=True, trials=6, ctas=2, release_peers=False)
    assert failure is not None and ("reloaded" in failure or "read stage" in failure), failure
