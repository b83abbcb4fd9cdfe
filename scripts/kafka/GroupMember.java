// One member of a consumer group, run by the compatibility tests against
// Tributary (internal/testenv/kafkamember.go) to roll a live group from one
// group.protocol to the other and back, as an operator rolls an
// application.
//
// Usage: GroupMember <bootstrap> <group> <topic> <classic|consumer> <name>
//
// It subscribes to the topic and prints, each on its own line:
//   REC <name> <partition> <offset> <value>   for every record it consumed
//   ASSIGNED <name> <partitions> / REVOKED ... / LOST ...   at each change
//     (the partitions added or taken away; the consumer protocol and the
//     cooperative one pass only those), then OWNS <name> <count> <partitions>
//   COMMITFAIL <name> <error>   when a commit failed
//   CLOSED <name>   once it has left the group
// It commits synchronously after processing each poll's records, and in
// onPartitionsRevoked, so that whoever takes a partition over starts right
// after what it printed. When its standard input closes it closes the
// consumer (which leaves the group) and exits 0.

import java.io.InputStream;
import java.time.Duration;
import java.util.Collection;
import java.util.Collections;
import java.util.HashSet;
import java.util.Properties;
import java.util.Set;
import java.util.concurrent.atomic.AtomicBoolean;

import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRebalanceListener;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.StringDeserializer;

public class GroupMember {
    public static void main(String[] args) throws Exception {
        if (args.length != 5) {
            System.err.println("usage: GroupMember <bootstrap> <group> <topic> <classic|consumer> <name>");
            System.exit(2);
        }
        String name = args[4];
        Properties props = new Properties();
        props.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, args[0]);
        props.put(ConsumerConfig.GROUP_ID_CONFIG, args[1]);
        props.put(ConsumerConfig.GROUP_PROTOCOL_CONFIG, args[3]);
        props.put(ConsumerConfig.CLIENT_ID_CONFIG, name);
        props.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        props.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        props.put(ConsumerConfig.MAX_POLL_RECORDS_CONFIG, "20");
        props.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        props.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        if (args[3].equals("classic")) {
            // Classic members learn of a rebalance by heartbeat: often, so
            // that the test's rolls take seconds. The assignors are Java's
            // default (range first: the eager protocol).
            props.put(ConsumerConfig.HEARTBEAT_INTERVAL_MS_CONFIG, "300");
            props.put(ConsumerConfig.SESSION_TIMEOUT_MS_CONFIG, "10000");
        }

        AtomicBoolean stop = new AtomicBoolean();
        Thread stdin = new Thread(() -> {
            try {
                InputStream in = System.in;
                while (in.read() != -1) {
                    // Only the end of standard input matters.
                }
            } catch (Exception e) {
                // Closed: stop as well.
            }
            stop.set(true);
        });
        stdin.setDaemon(true);
        stdin.start();

        KafkaConsumer<String, String> consumer = new KafkaConsumer<>(props);
        Set<TopicPartition> owned = new HashSet<>();
        consumer.subscribe(Collections.singletonList(args[2]), new ConsumerRebalanceListener() {
            @Override
            public void onPartitionsRevoked(Collection<TopicPartition> partitions) {
                commit(consumer, name);
                owned.removeAll(partitions);
                say("REVOKED " + name + " " + partitions + " at " + System.currentTimeMillis());
                say("OWNS " + name + " " + owned.size() + " " + owned);
            }

            @Override
            public void onPartitionsAssigned(Collection<TopicPartition> partitions) {
                owned.addAll(partitions);
                say("ASSIGNED " + name + " " + partitions + " at " + System.currentTimeMillis());
                say("OWNS " + name + " " + owned.size() + " " + owned);
            }

            @Override
            public void onPartitionsLost(Collection<TopicPartition> partitions) {
                owned.removeAll(partitions);
                say("LOST " + name + " " + partitions + " at " + System.currentTimeMillis());
                say("OWNS " + name + " " + owned.size() + " " + owned);
            }
        });
        while (!stop.get()) {
            ConsumerRecords<String, String> records = consumer.poll(Duration.ofMillis(100));
            if (records.isEmpty()) {
                continue;
            }
            StringBuilder out = new StringBuilder();
            for (ConsumerRecord<String, String> r : records) {
                out.append("REC ").append(name).append(' ').append(r.partition()).append(' ')
                        .append(r.offset()).append(' ').append(r.value()).append('\n');
            }
            System.out.print(out);
            System.out.flush();
            commit(consumer, name);
        }
        consumer.close();
        say("CLOSED " + name);
        System.exit(0);
    }

    static void commit(KafkaConsumer<String, String> consumer, String name) {
        try {
            consumer.commitSync(Duration.ofSeconds(10));
        } catch (Exception e) {
            say("COMMITFAIL " + name + " " + e);
        }
    }

    static synchronized void say(String line) {
        System.out.println(line);
        System.out.flush();
    }
}
