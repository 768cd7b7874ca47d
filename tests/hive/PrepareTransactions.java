// Makes the metastore's transaction and lock tables in its database (hive-site.xml on the
// classpath says which), which DataNucleus's schema creation leaves out.
public class PrepareTransactions {
    public static void main(String[] args) throws Exception {
        org.apache.hadoop.hive.metastore.txn.TxnDbUtil.prepDb(new org.apache.hadoop.hive.conf.HiveConf());
    }
}
