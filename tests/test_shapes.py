import pytest

from evo.core.errors import ShapeError
from evo.core.shapes import (
    BUCKETS,
    Shape,
    build_shape_set,
    flop_bucket,
    grid_shapes,
    log_cell,
)


def test_parse_and_properties():
    s = Shape.parse("77x4096x4096")
    assert (s.M, s.N, s.K) == (77, 4096, 4096)
    assert s.flops == 2 * 77 * 4096 * 4096
    assert s.min_bytes == 2 * (77 * 4096 + 4096 * 4096 + 77 * 4096)
    assert str(s) == "77x4096x4096"


@pytest.mark.parametrize("text", ["77x4096", "axbxc", "0x4x4", "-1x4x4", ""])
def test_bad_shapes_are_refused(text):
    with pytest.raises(ShapeError, match="MxNxK|positive"):
        Shape.parse(text)


def test_cuda_l2_grid_has_1000_shapes():
    sizes = [64, 128, 256, 512, 1024, 2048, 4096, 8192, 12288, 16384]
    shapes = grid_shapes(sizes)
    assert len(shapes) == 1000 and len(set(shapes)) == 1000


def test_shape_set_deduplicates_and_keeps_order():
    shapes = build_shape_set(listed=["64x64x64", "1x1x1"], grid=[64])
    assert shapes == [Shape(64, 64, 64), Shape(1, 1, 1)]


def test_empty_set_is_an_error():
    with pytest.raises(ShapeError, match="empty"):
        build_shape_set(listed=[], grid=[])


def test_buckets_cover_the_grid():
    labels = [b[0] for b in BUCKETS]
    assert flop_bucket(2 * 64 ** 3) == labels[0]
    assert flop_bucket(2 * 16384 ** 3) == labels[-1]
    assert flop_bucket(1e9) == "1-10 GFLOP"


def test_log_cells_group_neighbouring_shapes():
    assert log_cell(Shape(77, 4096, 4096)) == log_cell(Shape(100, 4096, 4096))
    assert log_cell(Shape(77, 4096, 4096)) != log_cell(Shape(333, 4096, 4096))


def test_the_bucket_tables_median_roofline_is_the_median():
    """Of an even count, the mean of the middle two (it was the upper one)."""
    from evo.core.shapes import Shape
    from evo.core.summary import bucket_table
    best = {Shape(64, 64, 64 * i): {"speedup": 1.0, "roofline_fraction": f} for i, f in enumerate((0.2, 0.4, 0.6, 0.8), 1)}
    assert next(r for r in bucket_table(best) if r["bucket"] == "all")["median_roofline"] == pytest.approx(0.5)
