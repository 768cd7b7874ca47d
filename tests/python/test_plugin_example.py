"""PyIceberg end to end through a mount served by an example backend (Python or
JavaScript): RUSTBERG_MOUNT names the mount."""

import os

import pyarrow as pa
import pytest
from pyiceberg.catalog import load_catalog
from pyiceberg.exceptions import NamespaceNotEmptyError, NoSuchTableError
from pyiceberg.expressions import EqualTo
from pyiceberg.partitioning import PartitionField, PartitionSpec
from pyiceberg.schema import Schema
from pyiceberg.transforms import IdentityTransform
from pyiceberg.types import LongType, NestedField, StringType

ARROW = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("kind", pa.string())])


def rows(*items):
    return pa.Table.from_pylist([{"id": i, "kind": k} for i, k in items], schema=ARROW)


def test_a_table_lives_in_an_example_backend():
    catalog = load_catalog(
        "rustberg",
        **{"type": "rest", "uri": os.environ["RUSTBERG_URL"], "credential": os.environ["RUSTBERG_CREDENTIAL"]},
    )
    mount = os.environ["RUSTBERG_MOUNT"]
    catalog.create_namespace(f"{mount}.shop", {"team": "sales"})
    catalog.create_namespace(f"{mount}.shop.eu")
    assert (mount, "shop") in catalog.list_namespaces(mount)
    assert (mount, "shop", "eu") in catalog.list_namespaces(f"{mount}.shop")
    assert catalog.load_namespace_properties(f"{mount}.shop")["team"] == "sales"

    schema = Schema(NestedField(1, "id", LongType(), required=True), NestedField(2, "kind", StringType()))
    spec = PartitionSpec(PartitionField(source_id=2, field_id=1000, transform=IdentityTransform(), name="kind"))
    table = catalog.create_table(f"{mount}.shop.orders", schema=schema, partition_spec=spec)
    table.append(rows((1, "a"), (2, "b")))
    first = table.current_snapshot().snapshot_id
    table.append(rows((3, "a")))

    # A writer holding an older state loses the compare-and-swap (409), retries on the
    # new base, and lands: nothing is lost.
    stale = catalog.load_table(f"{mount}.shop.orders")
    table.append(rows((4, "b")))
    stale.append(rows((5, "c")))

    table = catalog.load_table(f"{mount}.shop.orders")
    assert len(table.snapshots()) == 4
    assert table.history()[0].snapshot_id == first
    assert sorted(table.scan(row_filter=EqualTo("kind", "a")).to_arrow()["id"].to_pylist()) == [1, 3]
    assert sorted(table.scan().to_arrow()["id"].to_pylist()) == [1, 2, 3, 4, 5]

    catalog.rename_table(f"{mount}.shop.orders", f"{mount}.shop.eu.orders")
    assert not catalog.table_exists(f"{mount}.shop.orders")
    assert catalog.load_table(f"{mount}.shop.eu.orders").scan().to_arrow().num_rows == 5
    with pytest.raises(NamespaceNotEmptyError):
        catalog.drop_namespace(f"{mount}.shop.eu")
    catalog.drop_table(f"{mount}.shop.eu.orders")
    with pytest.raises(NoSuchTableError):
        catalog.load_table(f"{mount}.shop.eu.orders")
    catalog.drop_namespace(f"{mount}.shop.eu")
    catalog.drop_namespace(f"{mount}.shop")
    assert catalog.list_namespaces(mount) == []
