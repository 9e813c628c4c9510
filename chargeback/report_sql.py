"""The SQL of the report's finest lines, from two sources that must agree row by row:

* `raw`: the reference. Every interval overlapping the window, clipped to it (an open one closed at `now`),
  minus each adjustment's stretch inside closed months (so a closed month shows what it showed when it
  closed), plus the adjustment lines booked in the window and the hardware-fault credits' lines; cut at UTC days
  and rate changes.
* `rollups`: what the report reads. Whole days of ended intervals from `chargeback_usagerollup` (kept by the
  database in the same transaction as every interval write, migration 0005), closed months from their frozen
  lines (`chargeback_closedline`, written at close), and from the raw tables only what rollups cannot hold:
  intervals still open, adjustment stretches, adjustment lines and credits (few rows, through their indexes).

Both end in a `lines` CTE with LINE_KEYS, device_seconds, gpu_equivalent_seconds and cost (rounded to the cent
there, once: docs/chargeback.md, "Rounding"); `chargeback.selectors.report_query` groups those into rows.
Parameters: %(start)s, %(end)s, %(now)s; `where` is a string of " AND ..." conditions on columns every source
has (team_id, cost_center, cluster, strategy, gpu_model, request_id).
"""
from __future__ import annotations

# Rate cards as segments [valid_from, valid_to); before the first card of a model and strategy: unpriced.
# A card starts at 00:00 UTC, so a segment never cuts a day.
RATES_CTE = """rates AS (
    SELECT gpu_model, strategy, price_per_equivalent_hour AS price, currency,
        valid_from::timestamp AT TIME ZONE 'UTC' AS valid_from,
        COALESCE(LEAD(valid_from::timestamp AT TIME ZONE 'UTC') OVER (
            PARTITION BY gpu_model, strategy ORDER BY valid_from), 'infinity') AS valid_to
    FROM chargeback_ratecard
    UNION ALL
    SELECT gpu_model, strategy, NULL, '', '-infinity', min(valid_from)::timestamp AT TIME ZONE 'UTC'
    FROM chargeback_ratecard GROUP BY gpu_model, strategy
)"""

# The finest line of the report: every dimension it can be grouped by, the UTC day, the category and the rate
# segment. Cost is rounded to the cent here, once, and every coarser row is a sum of rounded lines, so a
# report's rows add up to its total whatever the grouping.
LINE_KEYS = ("team_id, cost_center, cluster, strategy, gpu_model, mig_profile, request_id, day, category, "
             "currency, segment")

# From `per_den` (LINE_KEYS, den, device_seconds, eq_seconds_num, cost_num = sum(secs x num x price), and `lcm`,
# the least common multiple of the line's denominators): the line's exact cost A / B, with A over the common
# denominator and B = 3600 x lcm, rounded half away from zero to whole cents in integer arithmetic
# (floor((200|A| + B) / 2B)), so no intermediate decimal rounding can move a half cent.
_LINES_CTE = f"""lines AS (
    SELECT {LINE_KEYS},
        sum(device_seconds) AS device_seconds,
        sum(eq_seconds_num::numeric(60, 24) / den) AS gpu_equivalent_seconds,
        sign(sum(cost_num * div(lcm, den))) * div(200 * abs(sum(cost_num * div(lcm, den))) + 3600 * max(lcm),
                                                  7200 * max(lcm)) / 100 AS cost
    FROM per_den
    GROUP BY {LINE_KEYS}
)"""

_SPAN_COLUMNS = ("team_id, cost_center, cluster, strategy, gpu_model, mig_profile, request_id, devices, "
                 "equivalents_num AS num, equivalents_den AS den")


def _adjustment_spans(where: str) -> str:
    return f"""
    -- closed months stay as they were closed: take back what changed after
    SELECT {_SPAN_COLUMNS}, category, -sign, NULL::timestamptz,
        GREATEST(started_at, %(start)s), LEAST(ended_at, %(end)s)
    FROM chargeback_adjustment
    WHERE started_at < %(end)s AND ended_at > %(start)s{where}
    UNION ALL  -- ... and book it in the next open month
    SELECT {_SPAN_COLUMNS}, CASE category WHEN 'waste' THEN 'waste_adjustment'
        WHEN 'idle' THEN 'idle_adjustment' ELSE 'adjustment' END,
        sign, booked_at, started_at, ended_at
    FROM chargeback_adjustment
    WHERE booked_at >= %(start)s AND booked_at < %(end)s{where}"""


# A credit's lines (chargeback.credits.models.HardwareCredit): on the days of the credited run from when it was
# recorded (created_horizon: time frozen then is one line booked there), up to where it was reversed (reversed_at
# set: the lines still open then are gone; reversed_horizon: what was frozen gets a reversal line booked there).
_CREATED = "COALESCE(created_horizon, '-infinity')"
_KEPT_UNTIL = "CASE WHEN reversed_at IS NULL THEN 'infinity' ELSE COALESCE(reversed_horizon, '-infinity') END"


def _credit_spans(where: str) -> str:
    return f"""
    SELECT {_SPAN_COLUMNS}, 'credit', -1, NULL::timestamptz,
        GREATEST(started_at, {_CREATED}, %(start)s), LEAST(ended_at, {_KEPT_UNTIL}, %(end)s)
    FROM chargeback_hardwarecredit
    WHERE started_at < %(end)s AND ended_at > %(start)s{where}
    UNION ALL  -- time frozen when it was recorded: one line in the first open month
    SELECT {_SPAN_COLUMNS}, 'credit', -1, created_horizon, started_at, LEAST(ended_at, created_horizon)
    FROM chargeback_hardwarecredit
    WHERE created_horizon >= %(start)s AND created_horizon < %(end)s AND started_at < created_horizon
        AND created_horizon < {_KEPT_UNTIL}{where}
    UNION ALL  -- reversed after some of its lines were frozen: those come back in the first open month then
    SELECT {_SPAN_COLUMNS}, 'credit_reversal', 1, reversed_horizon, started_at, LEAST(ended_at, reversed_horizon)
    FROM chargeback_hardwarecredit
    WHERE reversed_at IS NOT NULL AND reversed_horizon >= %(start)s AND reversed_horizon < %(end)s
        AND started_at < reversed_horizon AND {_CREATED} < reversed_horizon{where}"""


def _pieces(spans_source: str, *, skip_days: str = "") -> str:
    """buckets (spans cut at UTC days; an adjustment line is one piece, on the day it is booked) and pieces
    (buckets cut at rate changes), then their sums per line and denominator (`piece_sums`)."""
    return f"""
buckets AS (
    SELECT sp.*, b.day,
        CASE WHEN sp.booked_at IS NULL THEN GREATEST(sp.s, b.day) ELSE sp.s END AS bs,
        CASE WHEN sp.booked_at IS NULL THEN LEAST(sp.e, b.day + interval '1 day') ELSE sp.e END AS be
    FROM {spans_source} sp
    CROSS JOIN LATERAL generate_series(
        date_trunc('day', COALESCE(sp.booked_at, sp.s), 'UTC'),
        COALESCE(sp.booked_at, sp.e - interval '1 microsecond'),
        interval '1 day') AS b(day)
    WHERE sp.e > sp.s{skip_days}
),
pieces AS (
    SELECT bk.*, COALESCE(r.currency, '') AS currency, r.price, r.valid_from AS segment,
        EXTRACT(EPOCH FROM LEAST(bk.be, r.valid_to) - GREATEST(bk.bs, r.valid_from)) AS secs
    FROM buckets bk
    LEFT JOIN rates r ON r.gpu_model = bk.gpu_model AND r.strategy = bk.strategy
        AND r.valid_from < bk.be AND r.valid_to > bk.bs
    WHERE bk.be > bk.bs
),
piece_sums AS (
    SELECT {LINE_KEYS}, den,
        sum(sign * secs * devices) AS device_seconds,
        sum(sign * secs * num) AS eq_seconds_num,
        sum(sign * secs * num * price) AS cost_num
    FROM pieces
    GROUP BY {LINE_KEYS}, den
)"""


_PER_DEN = f"""per_den AS (
    SELECT {LINE_KEYS}, den, sum(device_seconds) AS device_seconds, sum(eq_seconds_num) AS eq_seconds_num,
        sum(cost_num) AS cost_num,
        chargeback_lcm(den::numeric) OVER (PARTITION BY {LINE_KEYS}) AS lcm
    FROM ({{sources}}) AS s
    GROUP BY {LINE_KEYS}, den
)"""


def raw_lines(where: str) -> str:
    """The reference: the CTEs (after WITH) down to `lines`, from the raw intervals and adjustments."""
    return f"""{RATES_CTE},
spans AS (
    SELECT {_SPAN_COLUMNS}, category, 1 AS sign, NULL::timestamptz AS booked_at,
        GREATEST(started_at, %(start)s) AS s, LEAST(COALESCE(ended_at, %(now)s), %(end)s) AS e
    FROM chargeback_usageinterval
    WHERE tstzrange(started_at, ended_at) && tstzrange(%(start)s, %(end)s) AND started_at < %(now)s{where}
    UNION ALL{_adjustment_spans(where)}
    UNION ALL{_credit_spans(where)}
),{_pieces("spans")},
{_PER_DEN.format(sources="SELECT * FROM piece_sums")},
{_LINES_CTE}"""


# The intervals still open, up to e = LEAST(now, end): every one ends at the same e, so those of one line's keys,
# denominator and first day are summed before they are cut into days (thousands of pods of a few requests become
# a few groups). The first day holds each interval's own part of it; every later day, the same seconds for all of
# them, times their summed devices and equivalents. A day has one rate segment (cards start at 00:00 UTC).
_OPEN_CTES = """open_groups AS (
    SELECT team_id, cost_center, cluster, strategy, gpu_model, mig_profile, request_id, category, den, first_day,
        sum(devices) AS devices, sum(num) AS num,
        sum(first_secs * devices) AS first_device_seconds, sum(first_secs * num) AS first_eq_seconds_num
    FROM (
        SELECT team_id, cost_center, cluster, strategy, gpu_model, mig_profile, request_id, category, devices,
            equivalents_num AS num, equivalents_den AS den, o.first_day,
            EXTRACT(EPOCH FROM LEAST(%(now)s, %(end)s, o.first_day + interval '1 day') - o.s) AS first_secs
        FROM chargeback_usageinterval
        CROSS JOIN LATERAL (SELECT GREATEST(started_at, %(start)s) AS s,
                                   date_trunc('day', GREATEST(started_at, %(start)s), 'UTC') AS first_day) o
        WHERE ended_at IS NULL AND started_at < %(end)s AND started_at < %(now)s
            AND o.s < LEAST(%(now)s, %(end)s){where}
    ) i
    GROUP BY team_id, cost_center, cluster, strategy, gpu_model, mig_profile, request_id, category, den, first_day
),
open_days AS (
    SELECT g.team_id, g.cost_center, g.cluster, g.strategy, g.gpu_model, g.mig_profile, g.request_id, d.day,
        g.category, COALESCE(r.currency, '') AS currency, r.valid_from AS segment, g.den,
        x.device_seconds, x.eq_seconds_num, x.eq_seconds_num * r.price AS cost_num
    FROM open_groups g
    CROSS JOIN LATERAL generate_series(g.first_day, LEAST(%(now)s, %(end)s) - interval '1 microsecond',
                                       interval '1 day') AS d(day)
    CROSS JOIN LATERAL (SELECT EXTRACT(EPOCH FROM LEAST(%(now)s, %(end)s, d.day + interval '1 day') - d.day) AS secs) t
    CROSS JOIN LATERAL (SELECT
        CASE WHEN d.day = g.first_day THEN g.first_device_seconds ELSE t.secs * g.devices END AS device_seconds,
        CASE WHEN d.day = g.first_day THEN g.first_eq_seconds_num ELSE t.secs * g.num END AS eq_seconds_num) x
    LEFT JOIN rates r ON r.gpu_model = g.gpu_model AND r.strategy = g.strategy
        AND r.valid_from <= d.day AND r.valid_to > d.day
    WHERE {not_frozen}
)"""


def rollup_lines(where: str) -> str:
    """The same lines from rollups, frozen lines and the few raw rows rollups cannot hold."""
    in_frozen = "EXISTS (SELECT 1 FROM frozen f WHERE {day} >= f.starts AND {day} < f.ends)"
    return f"""{RATES_CTE},
frozen AS (  -- closed months whose lines were frozen at close
    SELECT * FROM (
        SELECT month::timestamp AT TIME ZONE 'UTC' AS starts,
            (month + interval '1 month')::timestamp AT TIME ZONE 'UTC' AS ends
        FROM chargeback_closedperiod WHERE lines_frozen) m
    WHERE ends > %(start)s AND starts < %(end)s
),
spans AS (  -- adjustments and credits: few, and an adjustment line can straddle a rate change
    SELECT * FROM ({_adjustment_spans(where)}
    UNION ALL{_credit_spans(where)}) a(team_id, cost_center, cluster, strategy, gpu_model, mig_profile,
        request_id, devices, num, den, category, sign, booked_at, s, e)
),{_pieces("spans", skip_days=" AND NOT " + in_frozen.format(day="b.day"))},
{_OPEN_CTES.format(where=where, not_frozen="NOT " + in_frozen.format(day="d.day"))},
rolled AS (
    SELECT ro.team_id, ro.cost_center, ro.cluster, ro.strategy, ro.gpu_model, ro.mig_profile, ro.request_id,
        ro.day, ro.category, COALESCE(r.currency, '') AS currency, r.valid_from AS segment, ro.den,
        ro.device_us / 1000000.0 AS device_seconds, ro.eq_us_num / 1000000.0 AS eq_seconds_num,
        ro.eq_us_num / 1000000.0 * r.price AS cost_num
    FROM (SELECT * FROM chargeback_usagerollup WHERE day >= %(start)s AND day < %(end)s{where}) ro
    LEFT JOIN rates r ON r.gpu_model = ro.gpu_model AND r.strategy = ro.strategy
        AND r.valid_from <= ro.day AND r.valid_to > ro.day
    WHERE NOT {in_frozen.format(day="ro.day")}
),
{_PER_DEN.format(sources="SELECT * FROM piece_sums UNION ALL SELECT * FROM open_days UNION ALL SELECT * FROM rolled")},
{_LINES_CTE.replace("lines AS (", "open_lines AS (")},
lines AS (
    SELECT * FROM open_lines
    UNION ALL
    SELECT {LINE_KEYS}, device_seconds, gpu_equivalent_seconds, cost
    FROM chargeback_closedline
    WHERE day >= %(start)s AND day < %(end)s AND EXISTS (
        SELECT 1 FROM frozen f WHERE day >= f.starts AND day < f.ends){where}
)"""
