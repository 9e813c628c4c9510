"""Existing clear API tokens (rest_framework.authtoken's table) become hashed ApiTokens that keep working; the
clear values are then deleted. Irreversible: the clear values cannot be recovered from the digests."""
import hashlib

from django.db import migrations

OLD_TABLE = "authtoken_token"


def hash_clear_tokens(apps, schema_editor):
    connection = schema_editor.connection
    if OLD_TABLE not in connection.introspection.table_names():
        return  # a database that never had DRF's tokens
    ApiToken = apps.get_model("portal", "ApiToken")
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT key, user_id, created FROM {OLD_TABLE}")
        rows = cursor.fetchall()
    ApiToken.objects.bulk_create([
        # DRF allowed one token per user, so the name is unique per user.
        ApiToken(user_id=user_id, name="migrated", prefix=key[:8], digest=hashlib.sha256(key.encode()).hexdigest())
        for key, user_id, _ in rows
    ])
    # auto_now_add ignores a given value on create: keep the original creation times.
    for key, _, created in rows:
        ApiToken.objects.filter(digest=hashlib.sha256(key.encode()).hexdigest()).update(created_at=created)
    with connection.cursor() as cursor:
        cursor.execute(f"DELETE FROM {OLD_TABLE}")


class Migration(migrations.Migration):
    dependencies = [("portal", "0004_api_tokens")]

    operations = [migrations.RunPython(hash_clear_tokens, migrations.RunPython.noop, elidable=False)]
