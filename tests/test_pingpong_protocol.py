"""A host model of hopper's ping-pong consumers (PINGPONG=1), run under many random interleavings.

The kernel's synchronisation, as the template renders it: one producer thread loads every item's k-steps
in order into a ring of STAGES stages (it waits for a stage's `empty` mbarrier, then the TMA completes on
its `full` mbarrier, in any order among the loads in flight); consumer c takes the CTA's items c, c + 2,
...; before an item it waits for its turn (named barrier 5 - c: the other consumer has issued its previous
item's k-loop), then jumps to the item's first stage by counting k-steps; in the loop it waits on `full`
with the step's parity, keeps one wgmma batch in flight and releases the stage before (4 warp arrivals on
`empty`); after the loop it passes the turn (barrier 4 + c) where the CTA has a next item, then waits for
its last batch and releases the last stage. An mbarrier's parity wait returns once the barrier's phase
parity differs from the one asked for, so it cannot tell a phase from the one two uses later: that is
what the model checks, with every read compared against the step the stage should hold.

Without the turns (the unordered variant a review removed before it ran) the same model finds stages
read two uses ahead, or hangs; the last test keeps the model honest by finding exactly that."""
import random


class Mbarrier:
    def __init__(self, count: int):
        self.count, self.pending, self.tx, self.phase = count, count, 0, 0

    def arrive(self) -> None:
        self.pending -= 1
        assert self.pending >= 0, "more arrivals than the barrier's count"
        self._complete()

    def _complete(self) -> None:
        if self.pending == 0 and self.tx == 0:
            self.phase += 1
            self.pending = self.count

    def passed(self, parity: int) -> bool:  # try_wait.parity: done once the current phase's parity differs
        return self.phase % 2 != parity


class Broken(Exception):
    pass


def run_once(items: int, k_tiles: int, stages: int, ordered: bool, rng: random.Random) -> None:
    full = [Mbarrier(1) for _ in range(stages)]
    empty = [Mbarrier(4) for _ in range(stages)]
    held = [None] * stages  # the k-step a stage's last completed load holds
    reading: list[set] = [set() for _ in range(stages)]
    in_flight: list[tuple[int, int]] = []  # TMA loads (stage, step) not yet landed
    turns = {4: [0, 0], 5: [0, 0]}  # named barrier -> [threads arrived, completions]

    def producer():
        stage = phase = 0
        for step in range(items * k_tiles):
            while not empty[stage].passed(phase ^ 1):
                yield
            if reading[stage]:
                raise Broken(f"stage {stage} reloaded (step {step}) while steps {reading[stage]} read it")
            full[stage].pending -= 1  # arrive.expect_tx
            full[stage].tx += 1
            in_flight.append((stage, step))
            yield
            stage, phase = (0, phase ^ 1) if stage + 1 == stages else (stage + 1, phase)

    def sync(bar: int):  # bar.sync bar, 256 by 128 threads: until the barrier completes
        turns[bar][0] += 128
        done = turns[bar][1]
        if turns[bar][0] == 256:
            turns[bar] = [0, done + 1]
        while turns[bar][1] == done:
            yield

    def arrive(bar: int) -> None:  # bar.arrive bar, 256 by 128 threads
        turns[bar][0] += 128
        if turns[bar][0] > 256:
            raise Broken(f"named barrier {bar} over-arrived")
        if turns[bar][0] == 256:
            turns[bar] = [0, turns[bar][1] + 1]

    def consumer(c: int):
        for local in range(c, items, 2):
            if ordered and local >= 1:
                yield from sync(5 - c)
            first = local * k_tiles
            stage, phase = first % stages, (first // stages) & 1
            batches: list[tuple[int, int]] = []
            prev = -1
            for step in range(first, first + k_tiles):
                while not full[stage].passed(phase):
                    yield
                if held[stage] != step:
                    raise Broken(f"consumer {c} read stage {stage} for step {step}; it holds step {held[stage]}")
                reading[stage].add(step)
                batches.append((stage, step))
                yield
                while len(batches) > 1:  # wgmma_wait<1>
                    s, st = batches.pop(0)
                    reading[s].discard(st)
                if prev >= 0:
                    for _ in range(4):
                        empty[prev].arrive()
                        yield
                prev = stage
                stage, phase = (0, phase ^ 1) if stage + 1 == stages else (stage + 1, phase)
            if ordered and local + 1 < items:
                arrive(4 + c)
            yield
            for s, st in batches:  # wgmma_wait<0>
                reading[s].discard(st)
            for _ in range(4):
                empty[prev].arrive()
                yield
            for _ in range(rng.randrange(6)):  # the epilogue
                yield

    actors = {"producer": producer(), "consumer 0": consumer(0), "consumer 1": consumer(1)}
    weights = {name: rng.choice((0.05, 1, 5)) for name in actors}
    tma_weight = rng.choice((0.1, 1, 5))
    for _ in range(100_000):
        if not actors:
            break
        names = [*actors, "tma"]
        who = rng.choices(names, weights=[*(weights[n] for n in actors), tma_weight])[0]
        if who == "tma":
            if in_flight:
                stage, step = in_flight.pop(rng.randrange(len(in_flight)))
                held[stage] = step
                full[stage].tx -= 1
                full[stage]._complete()
            continue
        try:
            next(actors[who])
        except StopIteration:
            del actors[who]
    else:
        raise Broken("hangs")
    if any(arrived for arrived, _ in turns.values()):
        raise Broken("a named barrier is left half-arrived at exit")
    if in_flight:
        raise Broken("loads still in flight at exit")


def first_failure(ordered: bool, trials: int) -> str | None:
    for items in range(6):
        for stages in range(2, 8):
            for k_tiles in range(1, 9):
                for trial in range(trials):
                    rng = random.Random(f"{items}-{stages}-{k_tiles}-{trial}")
                    try:
                        run_once(items, k_tiles, stages, ordered, rng)
                    except (Broken, AssertionError) as e:
                        return f"items {items}, stages {stages}, k-steps {k_tiles}: {e}"
    return None


def test_ordered_pingpong_reads_every_stage_it_should_and_ends_clean():
    """1 to 5 items a CTA (odd counts too), 2-7 stages, 1-8 k-steps an item, random interleavings with a
    slow or fast producer, consumers and TMA: every read finds its step, no stage is reloaded while read,
    no barrier is over-arrived or left half-arrived, nothing hangs."""
    assert first_failure(ordered=True, trials=6) is None


def test_the_model_catches_the_unordered_variant():
    """The variant without turns jumps to a stage whose previous use it cannot tell from its own."""
    failure = first_failure(ordered=False, trials=6)
    assert failure is not None and ("read stage" in failure or "hangs" in failure or "reloaded" in failure), failure
