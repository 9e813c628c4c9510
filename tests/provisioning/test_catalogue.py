"""The GPU catalogue shipped with the project: models, MIG profiles and layouts."""
from fractions import Fraction

import pytest

from gpu.catalogue import load_catalogue, mig_equivalents

CATALOGUE = load_catalogue()


@pytest.mark.parametrize("key", ["A30-24GB", "A100-40GB", "A100-80GB", "H100-80GB", "H200-141GB", "B200-180GB"])
def test_required_models_are_in_the_catalogue_with_mig_profiles(key):
    assert CATALOGUE.model(key).mig is not None


def test_profile_facts_match_the_mig_user_guide():
    h200 = CATALOGUE.model("H200-141GB").mig
    assert (h200.total_slices, h200.profiles["1g.18gb"].max_instances, h200.profiles["3g.71gb"].max_instances) == (7, 7, 2)
    a30 = CATALOGUE.model("A30-24GB").mig
    assert a30.total_slices == 4 and a30.profiles["4g.24gb"].memory_gb == 24
    assert CATALOGUE.profile("H200-141GB", "1g.18gb+me").resource_name == "nvidia.com/mig-1g.18gb.me"


def test_gpu_equivalents_of_mig_profiles():
    h200, a30 = CATALOGUE.model("H200-141GB").mig, CATALOGUE.model("A30-24GB").mig
    assert mig_equivalents(h200.profiles["1g.18gb"], h200) == Fraction(1, 7)
    assert mig_equivalents(a30.profiles["4g.24gb"], a30) == 1
    assert mig_equivalents(h200.profiles["3g.71gb"], h200, policy="memory") == Fraction(71, 141)


def test_layouts_resolve_per_gpu_by_pci_device_filter():
    assert CATALOGUE.layout_profiles("all-1g.10gb", "H100-80GB") == {"1g.10gb": 7}
    assert CATALOGUE.layout_profiles("all-1g.10gb", "A100-40GB") == {"1g.10gb": 4}
    assert CATALOGUE.layout_profiles("all-balanced", "H200-141GB") == {"1g.18gb": 2, "2g.35gb": 1, "3g.71gb": 1}
    assert CATALOGUE.layout_profiles("all-disabled", "H200-141GB") == {}
    assert CATALOGUE.layout_profiles("all-1g.18gb", "A100-80GB") == {}  # not a layout of that GPU


def test_gfd_product_labels_resolve_with_their_suffixes():
    assert CATALOGUE.model_by_product("NVIDIA-H200").key == "H200-141GB"
    assert CATALOGUE.model_by_product("NVIDIA-A100-SXM4-40GB-MIG-1g.5gb").key == "A100-40GB"
    assert CATALOGUE.model_by_product("NVIDIA-L40S-SHARED").key == "L40S-48GB"


@pytest.mark.django_db
def test_catalogue_is_in_the_database_after_migrate():
    from provisioning.models import GpuModel, MigProfile

    assert GpuModel.objects.count() == len(CATALOGUE.models)
    assert MigProfile.objects.filter(gpu_model__key="H200-141GB").count() == 7


@pytest.mark.django_db
def test_a_mig_pool_must_name_a_layout_that_exists_for_its_gpu():
    from django.core.exceptions import ValidationError

    from provisioning.inventory import cluster_declare

    with pytest.raises(ValidationError) as error:
        cluster_declare(name="c1", pools=[{"name": "p", "gpu_model": "A100-80GB", "sharing_mode": "mig",
                                           "mig_layout": "all-1g.18gb"}])
    assert "mig_layout" in error.value.message_dict
