"""The inventory generation: one row, bumped by statement-level triggers on every table the decision's inventory is
read from, in the writing transaction itself (provisioning.models.InventoryGeneration)."""

from django.db import migrations, models

INVENTORY_TABLES = ("provisioning_cluster", "provisioning_nodepool", "provisioning_gpumodel")

FORWARD = [
    # A sequence of its own (owned by no column, so TRUNCATE ... RESTART IDENTITY leaves it alone): a value taken
    # by a transaction that rolls back is never handed out again, so a generation never names two contents.
    "CREATE SEQUENCE provisioning_inventory_generation_seq",
    "INSERT INTO provisioning_inventorygeneration (id, generation) "
    "VALUES (1, nextval('provisioning_inventory_generation_seq'))",
    # An upsert rather than an UPDATE: a flush (TRUNCATE of every table, tests) empties the row's table too.
    """
    CREATE FUNCTION provisioning_inventory_generation_bump() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        INSERT INTO provisioning_inventorygeneration (id, generation)
        VALUES (1, nextval('provisioning_inventory_generation_seq'))
        ON CONFLICT (id) DO UPDATE SET generation = EXCLUDED.generation;
        RETURN NULL;
    END
    $$
    """,
    *(
        f"CREATE TRIGGER {table}_inventory_generation AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON {table} "
        f"FOR EACH STATEMENT EXECUTE FUNCTION provisioning_inventory_generation_bump()"
        for table in INVENTORY_TABLES
    ),
]

BACKWARD = [
    *(f"DROP TRIGGER IF EXISTS {table}_inventory_generation ON {table}" for table in INVENTORY_TABLES),
    "DROP FUNCTION IF EXISTS provisioning_inventory_generation_bump()",
    "DROP SEQUENCE IF EXISTS provisioning_inventory_generation_seq",
]


class Migration(migrations.Migration):

    dependencies = [
        ("provisioning", "0012_cluster_multinode_settings"),
    ]

    operations = [
        migrations.CreateModel(
            name="InventoryGeneration",
            fields=[
                ("id", models.PositiveSmallIntegerField(default=1, primary_key=True, serialize=False)),
                ("generation", models.BigIntegerField()),
            ],
            options={
                "constraints": [
                    models.CheckConstraint(condition=models.Q(("id", 1)), name="provisioning_inventorygeneration_one_row")
                ],
            },
        ),
        migrations.RunSQL(sql=FORWARD, reverse_sql=BACKWARD),
    ]
