"""A local Ray cluster (2 CPUs) for the onnxide.batch tests, started once for the module and shut down after."""
import pytest


@pytest.fixture(scope="session")
def ray_cluster():
    ray = pytest.importorskip("ray", reason="Ray Data is not installed (pip install 'onnxide[ray]')")
    pytest.importorskip("ray.data", reason="Ray Data is not installed (pip install 'onnxide[ray]')")
    from ray import cloudpickle

    from batch import hooks

    cloudpickle.register_pickle_by_value(hooks)  # the actors cannot import tests/
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, configure_logging=False)
    ray.data.DataContext.get_current().enable_progress_bars = False
    try:
        yield ray
    finally:
        ray.shutdown()
