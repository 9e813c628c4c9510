"""Rollup maintenance (chargeback.models.UsageRollup): triggers, and the rollups of the intervals already stored."""

from django.db import migrations


# Rollups are kept by statement-level triggers with transition tables (one set-based statement per interval
# write, whatever its size; PostgreSQL 10+): what a statement removes is taken out of its days, what it adds
# is put in. Open intervals (ended_at NULL) are not rolled up: the report reads them raw, up to its "now".
_KEYS = "team_id, cost_center, cluster, strategy, gpu_model, mig_profile, request_id, category, day, den"


def _apply(source: str) -> str:
    return f"""
        INSERT INTO chargeback_usagerollup ({_KEYS}, device_us, eq_us_num)
        SELECT team_id, cost_center, cluster, strategy, gpu_model, mig_profile, request_id, category, d.day,
            equivalents_den, sum(c.sgn * us.us * devices), sum(c.sgn * us.us * equivalents_num)
        FROM ({source}) c
        CROSS JOIN LATERAL generate_series(date_trunc('day', c.started_at, 'UTC'),
                                           c.ended_at - interval '1 microsecond', interval '1 day') AS d(day)
        CROSS JOIN LATERAL (SELECT (EXTRACT(EPOCH FROM LEAST(c.ended_at, d.day + interval '1 day')
                                                  - GREATEST(c.started_at, d.day)) * 1000000)::numeric AS us) us
        WHERE c.ended_at > c.started_at
        GROUP BY team_id, cost_center, cluster, strategy, gpu_model, mig_profile, request_id, category, d.day,
            equivalents_den
        ON CONFLICT ({_KEYS}) DO UPDATE SET device_us = chargeback_usagerollup.device_us + EXCLUDED.device_us,
            eq_us_num = chargeback_usagerollup.eq_us_num + EXCLUDED.eq_us_num;"""


TRIGGER_SQL = f"""
-- jit off: generate_series() is estimated at 1,000 rows a call, and JIT-compiling this statement cost more than it
CREATE FUNCTION chargeback_rollup_apply() RETURNS trigger LANGUAGE plpgsql SET jit = off AS $$
BEGIN
    IF TG_OP IN ('UPDATE', 'DELETE') THEN
        {_apply("SELECT -1 AS sgn, * FROM old_rows WHERE ended_at IS NOT NULL")}
    END IF;
    IF TG_OP IN ('UPDATE', 'INSERT') THEN
        {_apply("SELECT 1 AS sgn, * FROM new_rows WHERE ended_at IS NOT NULL")}
    END IF;
    RETURN NULL;
END $$;
CREATE TRIGGER chargeback_rollup_insert AFTER INSERT ON chargeback_usageinterval
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION chargeback_rollup_apply();
CREATE TRIGGER chargeback_rollup_update AFTER UPDATE ON chargeback_usageinterval
    REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION chargeback_rollup_apply();
CREATE TRIGGER chargeback_rollup_delete AFTER DELETE ON chargeback_usageinterval
    REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION chargeback_rollup_apply();
"""
BACKFILL_SQL = _apply("SELECT 1 AS sgn, * FROM chargeback_usageinterval WHERE ended_at IS NOT NULL")
UNDO_SQL = """
DROP TRIGGER chargeback_rollup_insert ON chargeback_usageinterval;
DROP TRIGGER chargeback_rollup_update ON chargeback_usageinterval;
DROP TRIGGER chargeback_rollup_delete ON chargeback_usageinterval;
DROP FUNCTION chargeback_rollup_apply();
"""



class Migration(migrations.Migration):

    dependencies = [
        ("chargeback", "0006_rollups"),
    ]

    operations = [
        migrations.RunSQL(sql=TRIGGER_SQL, reverse_sql=UNDO_SQL),
        migrations.RunSQL(sql=BACKFILL_SQL, reverse_sql="DELETE FROM chargeback_usagerollup"),
    ]
