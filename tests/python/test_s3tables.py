"""An S3 Tables mount against moto: PyIceberg through Rustberg creates a namespace and a
partitioned table, appends twice and scans with a filter; S3 Tables itself points at
the metadata Rustberg wrote, in the bucket S3 Tables assigned to the table.

RUSTBERG_MOUNT names the s3tables mount; MOTO_URL is moto (S3 Tables and S3);
TABLE_BUCKET_ARN is the mount's table bucket."""

import os
import re

import boto3
from pyiceberg.exceptions import NoSuchTableError
from pyiceberg.expressions import EqualTo
from pyiceberg.partitioning import PartitionField, PartitionSpec
from pyiceberg.transforms import IdentityTransform

from on_moto import MOTO, SCHEMA, rows, rustberg

MOUNT = os.environ.get("RUSTBERG_MOUNT", "tables")
ARN = os.environ.get("TABLE_BUCKET_ARN", "")
KEYS = {"aws_access_key_id": "testing", "aws_secret_access_key": "testing", "region_name": "us-east-1"}


def test_create_append_scan_in_the_bucket_s3_tables_assigned():
    catalog = rustberg()
    catalog.create_namespace(f"{MOUNT}.sales")
    assert (MOUNT, "sales") in catalog.list_namespaces(MOUNT)
    spec = PartitionSpec(PartitionField(source_id=2, field_id=1000, transform=IdentityTransform(), name="kind"))
    table = catalog.create_table(f"{MOUNT}.sales.orders", schema=SCHEMA, partition_spec=spec)
    # The table is the whole bucket S3 Tables gave it, and its metadata is in there.
    assert re.fullmatch(r"s3://[0-9a-f-]+--table-s3", table.location()), table.location()
    assert table.metadata_location.startswith(table.location() + "/metadata/")
    table.append(rows((1, "a"), (2, "b")))
    table.append(rows((3, "a")))
    table = catalog.load_table(f"{MOUNT}.sales.orders")
    assert len(table.history()) == 2
    assert sorted(table.scan(row_filter=EqualTo("kind", "a")).to_arrow()["id"].to_pylist()) == [1, 3]
    files = [task.file.file_path for task in table.scan().plan_files()]
    assert files and all(f.startswith(table.location() + "/") for f in files), files

    # S3 Tables' own record points at the metadata file Rustberg wrote.
    s3tables = boto3.client("s3tables", endpoint_url=MOTO, **KEYS)
    recorded = s3tables.get_table(tableBucketARN=ARN, namespace="sales", name="orders")
    assert recorded["metadataLocation"] == table.metadata_location
    assert recorded["warehouseLocation"] == table.location()
    assert [(MOUNT, "sales", "orders")] == catalog.list_tables(f"{MOUNT}.sales")

    # Rename is S3 Tables' own; the table keeps its bucket.
    catalog.rename_table(f"{MOUNT}.sales.orders", f"{MOUNT}.sales.orders_2024")
    renamed = catalog.load_table(f"{MOUNT}.sales.orders_2024")
    assert renamed.location() == table.location()
    assert renamed.current_snapshot().snapshot_id == table.current_snapshot().snapshot_id

    catalog.drop_table(f"{MOUNT}.sales.orders_2024")
    try:
        catalog.load_table(f"{MOUNT}.sales.orders_2024")
        raise AssertionError("a dropped table still loads")
    except NoSuchTableError:
        pass
    assert s3tables.list_tables(tableBucketARN=ARN, namespace="sales")["tables"] == []
    catalog.drop_namespace(f"{MOUNT}.sales")
    assert (MOUNT, "sales") not in catalog.list_namespaces(MOUNT)
