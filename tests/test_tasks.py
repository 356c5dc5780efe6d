import numpy as np
import pytest
from helpers.paths import CONF

from longterm.config.builtins import generator_of
from longterm.plugins.resolve import PluginError, generator
from longterm.tasks import MIN_LENGTH, default_width, generate
from longterm.tasks.marked import MARKED_TASKS


def test_generator_equals_every_reference_case(reference_cases):
    assert len(reference_cases) >= 6
    for case, X_ref, y_ref, mask_ref in reference_cases:
        X, y, mask = generate(
            generator_of(case["task"]),
            np.random.RandomState(case["seed"]),
            case["min_length"],
            case["n_sequences"],
            case["max_length"],
        )
        np.testing.assert_array_equal(X, X_ref, err_msg=str(case))
        np.testing.assert_array_equal(y, y_ref, err_msg=str(case))
        np.testing.assert_array_equal(mask, mask_ref, err_msg=str(case))
        assert X.dtype == X_ref.dtype and y.dtype == y_ref.dtype and mask.dtype == mask_ref.dtype


def test_width_is_ceil_of_1_1_t0():
    assert default_width(50) == 56
    assert default_width(100) == 111
    assert default_width(1000) == 1100


@pytest.mark.parametrize("task", MARKED_TASKS)
@pytest.mark.parametrize("T0", [50, 100])
def test_structure(task, T0):
    X, y, mask = generate(generator_of(task), np.random.RandomState(7), T0, 2000)
    width = default_width(T0)
    lengths = mask.sum(1)
    assert X.shape == (2000, width, 2) and mask.shape == (2000, width)
    assert lengths.min() == T0 and lengths.max() == width - 1  # uniform on [T0, width - 1]
    assert set(np.unique(lengths)) == set(range(T0, width))
    assert np.all(mask == (np.arange(width) < lengths[:, None]))  # a prefix of real steps
    markers = X[:, :, 1]
    assert np.all((markers == 1).sum(1) == 2) and np.all((markers == -1).sum(1) == 2)
    assert np.all(markers[:, 0] == -1) and np.all(markers[np.arange(2000), lengths - 1] == -1)
    first, second = (np.sort(np.argwhere(markers == 1)[:, 1].reshape(-1, 2), axis=1)).T
    assert first.min() >= 1 and first.max() <= 9
    assert second.max() <= int(width / 2 - 1)
    assert np.all(X[~mask] == 0)  # nothing on padding


def test_addition_and_multiplication_target_statistics():
    rng = np.random.RandomState(0)
    X, y, _ = generate(generator_of("addition"), rng, 100, 200_000)
    marked = (X[:, :, 0] * (X[:, :, 1] == 1)).sum(1)
    np.testing.assert_allclose(y, 0.5 + marked / 4)
    assert abs(y.mean() - 0.5) < 0.002 and abs(y.std() - 0.204) < 0.002  # sd = sqrt(2/3)/4
    X, y, _ = generate(generator_of("multiplication"), rng, 100, 200_000)
    marked = np.where(X[:, :, 1] == 1, X[:, :, 0], 1).prod(1)
    np.testing.assert_allclose(y, marked)
    assert abs(y.mean() - 0.25) < 0.002 and abs(y.std() - 0.2205) < 0.002  # sd = sqrt(1/9 - 1/16)


def test_xor_target_is_xor_of_marked_bits():
    X, y, _ = generate(generator_of("xor"), np.random.RandomState(3), 50, 500)
    bits = X[:, :, 0][X[:, :, 1] == 1].reshape(-1, 2).astype(bool)
    assert y.dtype == bool and np.array_equal(y, bits[:, 0] ^ bits[:, 1])
    assert 0.4 < y.mean() < 0.6


def test_fixed_length_batch_has_no_padding():
    X, y, mask = generate(generator_of("addition"), np.random.RandomState(0), 53, 10, 53)
    assert X.shape == (10, 53, 2) and mask.all()


def test_shortest_supported_length_keeps_markers_apart():
    X, _, mask = generate(generator_of("addition"), np.random.RandomState(1), MIN_LENGTH, 5000)
    assert np.all((X[:, :, 1] == 1).sum(1) == 2) and np.all((X[:, :, 1] == -1).sum(1) == 2)


def test_a_generator_path_that_does_not_import_is_one_line():
    with pytest.raises(PluginError, match="module longterm.tasks.marked has no 'sum'"):
        generate("longterm.tasks.marked.sum", np.random.RandomState(0), 50, 1)
    with pytest.raises(PluginError, match="no module named 'nolab_absent'"):
        generate("nolab_absent.tasks.sum", np.random.RandomState(0), 50, 1)


def test_every_task_conf_file_names_a_generator():
    for path in sorted((CONF / "task").glob("*.yaml")):
        assert callable(generator(generator_of(path.stem))), path


def test_xor_classification_draws_the_xor_data():
    """The two-class xor task is the paper's xor data; only its loss and readout differ."""
    for T0, max_length in ((50, None), (60, 60)):
        xor = generate(generator_of("xor"), np.random.RandomState(11), T0, 200, max_length)
        classes = generate(
            generator_of("xor_classification"), np.random.RandomState(11), T0, 200, max_length
        )
        for a, b in zip(xor, classes, strict=True):
            np.testing.assert_array_equal(a, b)
            assert a.dtype == b.dtype
