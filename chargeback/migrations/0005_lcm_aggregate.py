"""chargeback_lcm(numeric): the least common multiple of a column, so the report can put GPU-equivalent
fractions of different denominators over one denominator and round a line's cost exactly (PostgreSQL 13+ has
the two-argument lcm(numeric, numeric); this folds it over rows)."""

from django.db import migrations


class Migration(migrations.Migration):

    dependencies = [
        ("chargeback", "0004_mps_strategy"),
    ]

    operations = [
        migrations.RunSQL(
            sql="CREATE AGGREGATE chargeback_lcm(numeric) (SFUNC = lcm, STYPE = numeric, INITCOND = '1')",
            reverse_sql="DROP AGGREGATE chargeback_lcm(numeric)",
        ),
    ]
