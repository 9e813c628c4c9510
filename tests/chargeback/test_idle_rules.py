"""The pure rules of idle GPUs and right-sizing (chargeback.idle.rules), and the PromQL they are read with."""
from __future__ import annotations

from datetime import timedelta
from decimal import Decimal
from fractions import Fraction

from chargeback.idle import dcgm, rules
from gpu.catalogue import load_catalogue

STEP = timedelta(seconds=60)


def _prices(whole="2.5", mig="2.5"):
    table = {"whole_gpu": (Decimal(whole), "EUR"), "mig": (Decimal(mig), "EUR")}
    return table.get


def test_idle_since_is_the_start_of_the_trailing_quiet_run():
    points = [(1000.0, 40.0), (1060.0, 3.0), (1120.0, 1.0), (1180.0, 0.0)]
    since = rules.idle_since(points, threshold=Decimal("5"), step=STEP)
    assert since == rules.at_utc(1060.0) - STEP
    assert rules.idle_since(points + [(1240.0, 5.0)], threshold=Decimal("5"), step=STEP) is None  # 5% is not below
    assert rules.idle_since([], threshold=Decimal("5"), step=STEP) is None


def test_flagged_only_after_idle_after_and_released_only_where_the_rule_says():
    dev, train = rules.IDLE_DEFAULTS["development"], rules.IDLE_DEFAULTS["training"]
    since = rules.at_utc(0)
    assert not rules.is_idle(since, now=since + dev.idle_after - timedelta(seconds=1), rule=dev)
    assert rules.is_idle(since, now=since + dev.idle_after, rule=dev)
    assert rules.should_release(detected_at=since, now=since + dev.release_after, rule=dev)
    assert not rules.should_release(detected_at=since, now=since + timedelta(days=30), rule=train)


def test_a_whole_h100_using_6_gb_at_11_percent_would_fit_a_1g_10gb_slice_for_much_less():
    holding = rules.Holding(gpu_model="H100-80GB", strategy="whole_gpu", mig_profile="", devices=1,
                            equivalents=Fraction(1))
    suggestion = rules.rightsizing(holding=holding, peak_memory_mib=6 * 1024, memory_total_mib=81559,
                                   median_percent=Decimal("11"), catalogue=load_catalogue(),
                                   price_per_equivalent_hour=_prices())
    assert suggestion.mig_profile == "1g.10gb" and suggestion.equivalents == Fraction(1, 7)
    assert suggestion.monthly_saving == Decimal("1564")  # 730 h x (1 - 1/7) x EUR 2.50
    assert suggestion.text == ("peak 6 GB of 80 GB, median utilisation 11%: a 1g.10gb MIG slice would serve it "
                               "for about EUR 1,564 a month less")


def test_compute_need_and_memory_need_both_bound_the_slice():
    holding = rules.Holding(gpu_model="H100-80GB", strategy="whole_gpu", mig_profile="", devices=1,
                            equivalents=Fraction(1))
    busy = rules.rightsizing(holding=holding, peak_memory_mib=6 * 1024, memory_total_mib=81559,
                             median_percent=Decimal("40"), catalogue=load_catalogue(),
                             price_per_equivalent_hour=_prices())
    assert busy.mig_profile == "3g.40gb"  # 3/7 of the GPU covers a 40% median
    full = rules.rightsizing(holding=holding, peak_memory_mib=75 * 1024, memory_total_mib=81559,
                             median_percent=Decimal("2"), catalogue=load_catalogue(),
                             price_per_equivalent_hour=_prices())
    assert full is None  # 75 GB x 1.2 fits no slice smaller than the GPU


def test_no_mig_model_gets_no_suggestion_and_an_unpriced_one_says_so():
    l40s = rules.Holding(gpu_model="L40S-48GB", strategy="whole_gpu", mig_profile="", devices=1,
                         equivalents=Fraction(1))
    assert rules.rightsizing(holding=l40s, peak_memory_mib=1024, memory_total_mib=46068, median_percent=Decimal(1),
                             catalogue=load_catalogue(), price_per_equivalent_hour=_prices()) is None
    h100 = rules.Holding(gpu_model="H100-80GB", strategy="whole_gpu", mig_profile="", devices=1,
                         equivalents=Fraction(1))
    unpriced = rules.rightsizing(holding=h100, peak_memory_mib=1024, memory_total_mib=81559,
                                 median_percent=Decimal(1), catalogue=load_catalogue(),
                                 price_per_equivalent_hour=lambda strategy: None)
    assert unpriced.monthly_saving is None and "no saving is stated" in unpriced.text


def test_the_pod_selector_matches_exact_names_only():
    selector = dcgm.pod_selector(["team-a"], ["nb.1", "srv"])
    assert selector == '{namespace=~"team\\\\-a",pod=~"nb\\\\.1|srv"}'
    queries = dcgm.utilisation_queries(selector, 60)
    assert "DCGM_FI_PROF_GR_ENGINE_ACTIVE" in queries["peak"] and " or " in queries["peak"]
    assert queries["memory_total"].count("DCGM_FI_DEV_FB_") == 2
