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


# --- the catalogue agrees with mig-parted's default config (gpu/data/mig-parted-default-config.yaml, v0.15.0) ---

MIG_MODELS = sorted(key for key, model in CATALOGUE.models.items() if model.mig)
# GPUs mig-parted v0.15.0 knows that the portal does not stock, each named as the config's comments name it.
NOT_STOCKED = {"0x233A10DE": "H800 NVL", "0x233D10DE": "H100 96GB", "0x20B610DE": "PG506-96GB", "0x232910DE": "H20"}


def _filtered_ids() -> set[str]:
    ids = set()
    for entries in CATALOGUE.layouts.values():
        for entry in entries:
            device_filter = entry.get("device-filter") or []
            ids |= {d.upper().replace("0X", "0x") for d in ([device_filter] if isinstance(device_filter, str)
                                                              else device_filter)}
    return ids


@pytest.mark.parametrize("key", ["GB300-278GB", "B300-269GB", "GH200-144GB", "GH200-96GB", "RTX-PRO-6000-96GB"])
def test_the_gpus_mig_parted_v0_15_knows_are_in_the_catalogue(key):
    model = CATALOGUE.model(key)
    assert model.mig is not None and CATALOGUE.layout_profiles("all-balanced", key)
    assert CATALOGUE.model_by_product(model.product) is model


@pytest.mark.parametrize("key", MIG_MODELS)
def test_each_profile_fills_its_all_layout_with_the_catalogues_max_instances(key):
    """mig-parted's `all-<profile>` ('+' written '.') fills every GPU with the most instances of that profile, per the
    model's PCI device id: the catalogue's max_instances must be that count, for every profile it lists."""
    for name, profile in CATALOGUE.model(key).mig.profiles.items():
        assert CATALOGUE.layout_profiles(f"all-{name.replace('+', '.')}", key) == {name: profile.max_instances}, name


@pytest.mark.parametrize("key", MIG_MODELS)
def test_all_balanced_uses_the_models_profiles_within_its_compute_slices(key):
    mig = CATALOGUE.model(key).mig
    balanced = CATALOGUE.layout_profiles("all-balanced", key)
    assert balanced and set(balanced) <= set(mig.profiles)
    assert sum(mig.profiles[name].compute_slices * count for name, count in balanced.items()) <= mig.total_slices
    assert all(count <= mig.profiles[name].max_instances for name, count in balanced.items())


def test_every_gpu_the_mig_parted_config_filters_on_is_stocked_or_knowingly_left_out():
    stocked = {pci.upper().replace("0X", "0x") for model in CATALOGUE.models.values() for pci in model.pci_device_ids}
    assert _filtered_ids() - stocked == set(NOT_STOCKED)
    # And every MIG model's ids are ones the config has a layout for.
    for key in MIG_MODELS:
        assert {p.upper().replace("0X", "0x") for p in CATALOGUE.model(key).pci_device_ids} <= _filtered_ids(), key
