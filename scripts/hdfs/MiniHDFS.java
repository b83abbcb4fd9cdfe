// MiniHDFS runs Hadoop's in-process HDFS mini cluster (one NameNode, one
// DataNode) for Tributary's tests, on loopback ports.
//
// Usage: java -cp <classpath of pom.xml> MiniHDFS.java BASE_DIR [NAMENODE_PORT]
//
// It prints "MINIHDFS READY 127.0.0.1:<port>" on standard output once the
// cluster accepts writes, then runs until its standard input closes: the test
// binary holds the other end of that pipe, so the cluster stops (and its
// directory is removed) however the tests end, even on a kill -9.
import java.io.File;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Comparator;
import java.util.stream.Stream;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.hdfs.MiniDFSCluster;

public class MiniHDFS {
    public static void main(String[] args) throws Exception {
        if (args.length < 1) {
            System.err.println("usage: MiniHDFS BASE_DIR [NAMENODE_PORT]");
            System.exit(2);
        }
        File base = new File(args[0]);
        int port = args.length > 1 ? Integer.parseInt(args[1]) : 0;

        Configuration conf = new Configuration();
        conf.set(MiniDFSCluster.HDFS_MINIDFS_BASEDIR, base.getAbsolutePath());
        // Tests write as whatever user runs them; permissions are not what
        // they check.
        conf.setBoolean("dfs.permissions.enabled", false);
        // One DataNode: every block has one replica, and a write must not
        // wait for a second.
        conf.setInt("dfs.replication", 1);
        // Clients (colinmarc/hdfs) reach the DataNode at the address the
        // NameNode reports, which must be loopback here.
        conf.set("dfs.datanode.hostname", "127.0.0.1");
        conf.setBoolean("dfs.client.use.datanode.hostname", false);

        MiniDFSCluster cluster = new MiniDFSCluster.Builder(conf)
                .nameNodePort(port)
                .numDataNodes(1)
                .format(true)
                .build();
        cluster.waitActive();
        cluster.waitClusterUp();
        System.out.println("MINIHDFS READY 127.0.0.1:" + cluster.getNameNodePort());
        System.out.flush();

        Thread stopper = new Thread(() -> {
            try {
                cluster.shutdown(true);
            } catch (Throwable t) {
                t.printStackTrace();
            }
            removeAll(base.toPath());
        });
        // Whatever ends the JVM (stdin closed, SIGTERM), stop the cluster and
        // remove its files; halt if shutting down hangs.
        Runtime.getRuntime().addShutdownHook(stopper);
        while (System.in.read() != -1) {
            // wait for the test binary to go away
        }
        Thread killer = new Thread(() -> {
            try {
                Thread.sleep(15000);
            } catch (InterruptedException e) {
                return;
            }
            Runtime.getRuntime().halt(1);
        });
        killer.setDaemon(true);
        killer.start();
        System.exit(0);
    }

    private static void removeAll(Path p) {
        if (!Files.exists(p)) {
            return;
        }
        try (Stream<Path> s = Files.walk(p)) {
            s.sorted(Comparator.reverseOrder()).forEach(f -> f.toFile().delete());
        } catch (Exception e) {
            // best effort: the directory is a temporary one anyway
        }
    }
}
