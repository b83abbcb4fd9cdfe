// MiniHDFS runs Hadoop's in-process HDFS mini cluster for Tributary's tests,
// on loopback ports: one NameNode and one DataNode, or (-ha) two NameNodes
// behind the nameservice "tributary-ns", or (-kerberos) one NameNode secured
// by a real KDC (Hadoop's MiniKdc, Apache Kerby) with the data transfer
// protection given by -protection (authentication, integrity or privacy).
//
// Usage: java -cp <classpath of pom.xml> MiniHDFS BASE_DIR [-ha] [-kerberos] [-protection P]
//
// It writes a client configuration (core-site.xml, hdfs-site.xml) to
// BASE_DIR/client-conf, as a cluster's administrator hands it to users, and
// prints on standard output, once the cluster accepts writes:
//
//	MINIHDFS KDC <krb5.conf> <realm> <keytab of tributary@REALM> <stale keytab>   (-kerberos)
//	MINIHDFS READY <host:port of the active NameNode> <client conf dir>
//
// Then it reads commands, one a line, on standard input, answering each:
//
//	failover   (-ha) the active NameNode becomes standby and the other one
//	           active; answers "MINIHDFS ACTIVE <n> <host:port>"
//	crash      (-ha) the active NameNode stops dead (its connections cut),
//	           the other one becomes active, and the dead one restarts as
//	           standby; answers as failover does
//	standby    (-ha) the active NameNode becomes standby, leaving none
//	           active; answers "MINIHDFS ACTIVE -1 none"
//	activate   (-ha) after standby, the other NameNode becomes active;
//	           answers as failover does
//
// It runs until its standard input closes: the test binary holds the other
// end of that pipe, so the cluster stops (and its directory is removed)
// however the tests end, even on a kill -9.
import java.io.BufferedReader;
import java.io.File;
import java.io.InputStreamReader;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.stream.Stream;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.hdfs.MiniDFSCluster;
import org.apache.hadoop.hdfs.MiniDFSNNTopology;
import org.apache.hadoop.minikdc.MiniKdc;
import org.apache.hadoop.security.UserGroupInformation;

public class MiniHDFS {
    static final String NAMESERVICE = "tributary-ns";
    static final String USER = "tributary";
    static final List<Runnable> STOPS = new CopyOnWriteArrayList<>();

    public static void main(String[] args) throws Exception {
        if (args.length < 1) {
            System.err.println("usage: MiniHDFS BASE_DIR [-ha] [-kerberos] [-protection P]");
            System.exit(2);
        }
        File base = new File(args[0]);
        boolean ha = false, kerberos = false;
        String protection = "authentication";
        for (int i = 1; i < args.length; i++) {
            switch (args[i]) {
                case "-ha": ha = true; break;
                case "-kerberos": kerberos = true; break;
                case "-protection": protection = args[++i]; break;
                default:
                    System.err.println("unknown argument " + args[i]);
                    System.exit(2);
            }
        }
        // Whatever ends the JVM (stdin closed, SIGTERM), stop what runs, in
        // the reverse order of starting, then remove the files.
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            for (int i = STOPS.size() - 1; i >= 0; i--) {
                try {
                    STOPS.get(i).run();
                } catch (Throwable t) {
                    t.printStackTrace();
                }
            }
            removeAll(base.toPath());
        }));

        Configuration conf = new Configuration();
        conf.set(MiniDFSCluster.HDFS_MINIDFS_BASEDIR, new File(base, "dfs").getAbsolutePath());
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

        Map<String, String> clientCore = new LinkedHashMap<>();
        Map<String, String> clientHDFS = new LinkedHashMap<>();
        MiniKdc kdc = null;
        if (kerberos) {
            kdc = startKdc(base, conf, protection, clientCore, clientHDFS);
        }

        MiniDFSCluster.Builder builder = new MiniDFSCluster.Builder(conf).numDataNodes(1).format(true);
        if (ha) {
            builder.nnTopology(new MiniDFSNNTopology().addNameservice(
                    new MiniDFSNNTopology.NSConf(NAMESERVICE)
                            .addNN(new MiniDFSNNTopology.NNConf("nn1").setIpcPort(freePort()).setHttpPort(freePort()))
                            .addNN(new MiniDFSNNTopology.NNConf("nn2").setIpcPort(freePort()).setHttpPort(freePort()))));
        }
        MiniDFSCluster cluster = builder.build();
        if (ha) {
            cluster.transitionToActive(0);
        }
        cluster.waitActive();
        cluster.waitClusterUp();
        STOPS.add(() -> cluster.shutdown(true));

        String active = "127.0.0.1:" + cluster.getNameNodePort(0);
        if (ha) {
            clientCore.put("fs.defaultFS", "hdfs://" + NAMESERVICE);
            clientHDFS.put("dfs.nameservices", NAMESERVICE);
            clientHDFS.put("dfs.ha.namenodes." + NAMESERVICE, "nn1,nn2");
            clientHDFS.put("dfs.namenode.rpc-address." + NAMESERVICE + ".nn1", active);
            clientHDFS.put("dfs.namenode.rpc-address." + NAMESERVICE + ".nn2", "127.0.0.1:" + cluster.getNameNodePort(1));
            clientHDFS.put("dfs.client.failover.proxy.provider." + NAMESERVICE,
                    "org.apache.hadoop.hdfs.server.namenode.ha.ConfiguredFailoverProxyProvider");
        } else {
            clientCore.put("fs.defaultFS", "hdfs://" + active);
        }
        File clientConf = new File(base, "client-conf");
        clientConf.mkdirs();
        writeConf(new File(clientConf, "core-site.xml"), clientCore);
        writeConf(new File(clientConf, "hdfs-site.xml"), clientHDFS);

        if (kdc != null) {
            System.out.println("MINIHDFS KDC " + kdc.getKrb5conf().getAbsolutePath() + " " + kdc.getRealm() + " "
                    + new File(base, "tributary.keytab").getAbsolutePath() + " "
                    + new File(base, "stale.keytab").getAbsolutePath());
        }
        System.out.println("MINIHDFS READY " + active + " " + clientConf.getAbsolutePath());
        System.out.flush();

        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        int activeNN = 0, lastActive = 0; // activeNN -1: none
        for (String line; (line = in.readLine()) != null; ) {
            if (line.equals("failover") && ha && activeNN >= 0) {
                int next = 1 - activeNN;
                cluster.transitionToStandby(activeNN);
                cluster.transitionToActive(next);
                activeNN = lastActive = next;
                System.out.println("MINIHDFS ACTIVE " + next + " 127.0.0.1:" + cluster.getNameNodePort(next));
            } else if (line.equals("crash") && ha && activeNN >= 0) {
                int next = 1 - activeNN;
                cluster.shutdownNameNode(activeNN);
                cluster.transitionToActive(next);
                // The crashed one comes back, as standby, so that the
                // next failover has somewhere to go.
                cluster.restartNameNode(activeNN, false);
                activeNN = lastActive = next;
                System.out.println("MINIHDFS ACTIVE " + next + " 127.0.0.1:" + cluster.getNameNodePort(next));
            } else if (line.equals("standby") && ha && activeNN >= 0) {
                cluster.transitionToStandby(activeNN);
                activeNN = -1;
                System.out.println("MINIHDFS ACTIVE -1 none");
            } else if (line.equals("activate") && ha && activeNN < 0) {
                activeNN = lastActive = 1 - lastActive;
                cluster.transitionToActive(activeNN);
                System.out.println("MINIHDFS ACTIVE " + activeNN + " 127.0.0.1:" + cluster.getNameNodePort(activeNN));
            } else {
                System.out.println("MINIHDFS ERROR unknown command " + line);
            }
            System.out.flush();
        }
        // Standard input closed: the test binary is gone. Halt if shutting
        // down hangs.
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

    // startKdc starts a KDC, creates the cluster's service principal and the
    // user tributary (with a keytab, and a stale keytab: keys of the same
    // principal from before they were changed, as a keytab left behind by a
    // key rotation), and configures the cluster for Kerberos.
    static MiniKdc startKdc(File base, Configuration conf, String protection,
            Map<String, String> clientCore, Map<String, String> clientHDFS) throws Exception {
        File kdcDir = new File(base, "kdc");
        kdcDir.mkdirs();
        MiniKdc kdc = new MiniKdc(MiniKdc.createConf(), kdcDir);
        kdc.start();
        STOPS.add(kdc::stop);
        String realm = kdc.getRealm();
        File serviceKeytab = new File(base, "hdfs.keytab");
        kdc.createPrincipal(serviceKeytab, "hdfs/localhost", "HTTP/localhost");
        kdc.createPrincipal(new File(base, "stale.keytab"), USER);
        // MiniKdc does not expose deleting a principal; its Kerby server does.
        java.lang.reflect.Field f = MiniKdc.class.getDeclaredField("simpleKdc");
        f.setAccessible(true);
        ((org.apache.kerby.kerberos.kerb.server.SimpleKdcServer) f.get(kdc)).deletePrincipal(USER + "@" + realm);
        kdc.createPrincipal(new File(base, "tributary.keytab"), USER);

        String service = "hdfs/localhost@" + realm;
        conf.set("hadoop.security.authentication", "kerberos");
        conf.set("dfs.namenode.kerberos.principal", service);
        conf.set("dfs.namenode.keytab.file", serviceKeytab.getAbsolutePath());
        conf.set("dfs.datanode.kerberos.principal", service);
        conf.set("dfs.datanode.keytab.file", serviceKeytab.getAbsolutePath());
        conf.set("dfs.web.authentication.kerberos.principal", "HTTP/localhost@" + realm);
        conf.setBoolean("dfs.block.access.token.enable", true);
        conf.set("dfs.data.transfer.protection", protection);
        // A secured DataNode needs privileged ports or HTTPS; SASL on the
        // data transfer port is what the tests are about, so neither.
        conf.setBoolean("ignore.secure.ports.for.testing", true);
        UserGroupInformation.setConfiguration(conf);

        clientCore.put("hadoop.security.authentication", "kerberos");
        clientHDFS.put("dfs.namenode.kerberos.principal", service);
        clientHDFS.put("dfs.data.transfer.protection", protection);
        return kdc;
    }

    static int freePort() throws Exception {
        try (ServerSocket s = new ServerSocket(0)) {
            return s.getLocalPort();
        }
    }

    static void writeConf(File f, Map<String, String> props) throws Exception {
        StringBuilder b = new StringBuilder("<?xml version=\"1.0\"?>\n<configuration>\n");
        for (Map.Entry<String, String> e : props.entrySet()) {
            b.append("  <property><name>").append(e.getKey()).append("</name><value>")
                    .append(e.getValue()).append("</value></property>\n");
        }
        b.append("</configuration>\n");
        Files.writeString(f.toPath(), b.toString());
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
