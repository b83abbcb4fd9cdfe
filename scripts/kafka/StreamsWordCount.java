// A stateful Kafka Streams application the compatibility tests run against
// Tributary (internal/testenv/kafkastreams.go): it counts the words of the
// lines in an input topic. Grouping by word repartitions the stream through
// the internal topic <application id>-words-repartition, and the count keeps
// its state in a RocksDB store backed by the compacted internal topic
// <application id>-counts-changelog; Streams creates both on the broker.
// Every count update goes to the output topic (no record cache), keyed by
// the word, its value the count as an 8-byte big-endian long. Streams
// deletes the repartition topic's records once processed and committed.
//
// Usage: StreamsWordCount <bootstrap> <application id> <state dir> <input topic> <output topic>
//
// The application runs until its standard input closes, then closes Streams
// cleanly and exits 0. It prints "STATE <state>" on stdout at each change of
// Streams' state. If Streams fails (a stream thread dies, or Streams
// reaches ERROR) it prints the cause on stderr and exits 1 at once.

import java.io.InputStream;
import java.time.Duration;
import java.util.Arrays;
import java.util.Locale;
import java.util.Properties;

import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.errors.StreamsUncaughtExceptionHandler.StreamThreadExceptionResponse;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.Grouped;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Produced;
import org.apache.kafka.streams.state.KeyValueStore;

public class StreamsWordCount {
    public static void main(String[] args) throws Exception {
        if (args.length != 5 && args.length != 6) {
            System.err.println("usage: StreamsWordCount <bootstrap> <application id> <state dir> <input topic> <output topic> [processing guarantee]");
            System.exit(2);
        }
        Properties props = new Properties();
        props.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, args[0]);
        props.put(StreamsConfig.APPLICATION_ID_CONFIG, args[1]);
        props.put(StreamsConfig.STATE_DIR_CONFIG, args[2]);
        // Each count update reaches the output at once, and offsets are
        // committed often, so that the test sees the result quickly.
        props.put(StreamsConfig.STATESTORE_CACHE_MAX_BYTES_CONFIG, 0);
        props.put(StreamsConfig.COMMIT_INTERVAL_MS_CONFIG, 200);
        // Records of the repartition topic that are processed and committed
        // are deleted (DeleteRecords) at the next commit, not 30 s later.
        props.put(StreamsConfig.REPARTITION_PURGE_INTERVAL_MS_CONFIG, 200);
        props.put(StreamsConfig.REPLICATION_FACTOR_CONFIG, 1);
        if (args.length == 6) {
            // exactly_once_v2: transactions (KIP-447's producer per thread).
            props.put(StreamsConfig.PROCESSING_GUARANTEE_CONFIG, args[5]);
            // A killed instance's partitions and open transaction are
            // taken over sooner (the defaults are 45 s and 10 s).
            props.put(StreamsConfig.consumerPrefix("session.timeout.ms"), 6000);
            props.put(StreamsConfig.consumerPrefix("heartbeat.interval.ms"), 1000);
            props.put(StreamsConfig.producerPrefix("transaction.timeout.ms"), 5000);
        }

        StreamsBuilder builder = new StreamsBuilder();
        builder.stream(args[3], Consumed.with(Serdes.String(), Serdes.String()))
                .flatMapValues(line -> Arrays.asList(line.toLowerCase(Locale.ROOT).split("\\W+")))
                .filter((key, word) -> !word.isEmpty())
                .groupBy((key, word) -> word, Grouped.with("words", Serdes.String(), Serdes.String()))
                .count(Materialized.<String, Long, KeyValueStore<Bytes, byte[]>>as("counts")
                        .withKeySerde(Serdes.String())
                        .withValueSerde(Serdes.Long()))
                .toStream()
                .to(args[4], Produced.with(Serdes.String(), Serdes.Long()));

        KafkaStreams streams = new KafkaStreams(builder.build(), props);
        streams.setUncaughtExceptionHandler(e -> {
            System.err.println("stream thread failed:");
            e.printStackTrace();
            System.err.flush();
            Runtime.getRuntime().halt(1);
            return StreamThreadExceptionResponse.SHUTDOWN_CLIENT;
        });
        streams.setStateListener((now, before) -> {
            System.out.println("STATE " + now);
            System.out.flush();
            if (now == KafkaStreams.State.ERROR) {
                System.err.println("Kafka Streams reached ERROR (from " + before + ")");
                System.err.flush();
                Runtime.getRuntime().halt(1);
            }
        });
        streams.start();

        InputStream in = System.in;
        while (in.read() != -1) {
            // Only the end of standard input matters.
        }
        boolean closed = streams.close(Duration.ofSeconds(30));
        System.out.println("CLOSED " + closed);
        System.out.flush();
        System.exit(closed ? 0 : 1);
    }
}
