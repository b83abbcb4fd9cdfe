// Apache Kafka's Java transactional producer and consumer, as an
// application uses them, for the compatibility tests
// (internal/testenv/javatransactions.go).
//
// Usage:
//   JavaTransactions produce <bootstrap> <topic> <transactional id> <transactions>
//     Runs that many transactions of 10 records each (values t<i>-<j>,
//     spread over the topic's partitions). Every third transaction
//     (i % 3 == 2) is written, then aborted, the others committed; prints
//     "COMMITTED i" or "ABORTED i" after each.
//   JavaTransactions fence <bootstrap> <topic> <transactional id> <unused>
//     A first producer writes "zombie-<j>" in a transaction; a second
//     producer with the same transactional id starts (initTransactions),
//     which fences the first; the first's commit must fail with
//     ProducerFencedException (prints "FENCED"); the second commits
//     "successor-<j>" (prints "COMMITTED successor").
//   JavaTransactions consume <bootstrap> <topic> <read_committed|read_uncommitted> <count>
//     Reads the topic's partitions from the beginning with that isolation
//     level until it has read count records (or 60 s have passed), printing
//     "VALUE v" for each and "END <records read>" at the end; a quiet
//     second after count more records are looked for, so that a consumer
//     reading too much is seen.
//
// Exits 1 with the cause on stderr if anything fails.

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Properties;

import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.PartitionInfo;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

public class JavaTransactions {
    public static void main(String[] args) throws Exception {
        if (args.length != 5 || !(args[0].equals("produce") || args[0].equals("consume") || args[0].equals("fence"))) {
            System.err.println("usage: JavaTransactions produce <bootstrap> <topic> <transactional id> <transactions>");
            System.err.println("       JavaTransactions consume <bootstrap> <topic> <read_committed|read_uncommitted> <count>");
            System.exit(2);
        }
        try {
            if (args[0].equals("produce")) {
                produce(args[1], args[2], args[3], Integer.parseInt(args[4]));
            } else if (args[0].equals("fence")) {
                fence(args[1], args[2], args[3]);
            } else {
                consume(args[1], args[2], args[3], Integer.parseInt(args[4]));
            }
        } catch (Exception e) {
            e.printStackTrace();
            System.exit(1);
        }
        System.exit(0);
    }

    static void produce(String bootstrap, String topic, String id, int transactions) throws Exception {
        Properties props = new Properties();
        props.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        props.put(ProducerConfig.TRANSACTIONAL_ID_CONFIG, id);
        props.put(ProducerConfig.MAX_BLOCK_MS_CONFIG, 30000);
        try (KafkaProducer<String, String> p = new KafkaProducer<>(props, new StringSerializer(), new StringSerializer())) {
            p.initTransactions();
            int partitions = p.partitionsFor(topic).size();
            for (int i = 0; i < transactions; i++) {
                p.beginTransaction();
                for (int j = 0; j < 10; j++) {
                    p.send(new ProducerRecord<>(topic, j % partitions, "k" + j, "t" + i + "-" + j));
                }
                if (i % 3 == 2) {
                    // Written first, so that the abort has records to end
                    // (abortTransaction drops batches not yet sent).
                    p.flush();
                    p.abortTransaction();
                    System.out.println("ABORTED " + i);
                } else {
                    p.commitTransaction();
                    System.out.println("COMMITTED " + i);
                }
                System.out.flush();
            }
        }
    }

    static KafkaProducer<String, String> producer(String bootstrap, String id) {
        Properties props = new Properties();
        props.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        props.put(ProducerConfig.TRANSACTIONAL_ID_CONFIG, id);
        props.put(ProducerConfig.MAX_BLOCK_MS_CONFIG, 30000);
        return new KafkaProducer<>(props, new StringSerializer(), new StringSerializer());
    }

    static void fence(String bootstrap, String topic, String id) throws Exception {
        try (KafkaProducer<String, String> zombie = producer(bootstrap, id);
             KafkaProducer<String, String> successor = producer(bootstrap, id)) {
            zombie.initTransactions();
            zombie.beginTransaction();
            for (int j = 0; j < 5; j++) {
                zombie.send(new ProducerRecord<>(topic, "zombie-" + j));
            }
            zombie.flush();
            successor.initTransactions(); // fences the zombie, aborting its transaction
            try {
                zombie.commitTransaction();
                throw new IllegalStateException("the fenced producer committed");
            } catch (org.apache.kafka.common.errors.ProducerFencedException e) {
                System.out.println("FENCED");
            }
            successor.beginTransaction();
            for (int j = 0; j < 5; j++) {
                successor.send(new ProducerRecord<>(topic, "successor-" + j));
            }
            successor.commitTransaction();
            System.out.println("COMMITTED successor");
            System.out.flush();
        }
    }

    static void consume(String bootstrap, String topic, String isolation, int count) {
        Properties props = new Properties();
        props.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        props.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, isolation.toLowerCase(Locale.ROOT));
        props.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, false);
        try (KafkaConsumer<String, String> c = new KafkaConsumer<>(props, new StringDeserializer(), new StringDeserializer())) {
            List<TopicPartition> tps = new ArrayList<>();
            for (PartitionInfo pi : c.partitionsFor(topic)) {
                tps.add(new TopicPartition(topic, pi.partition()));
            }
            c.assign(tps);
            c.seekToBeginning(tps);
            int read = 0;
            long deadline = System.currentTimeMillis() + 60000;
            long quietUntil = Long.MAX_VALUE;
            while (System.currentTimeMillis() < Math.min(deadline, quietUntil)) {
                for (ConsumerRecord<String, String> r : c.poll(Duration.ofMillis(200))) {
                    System.out.println("VALUE " + r.value());
                    read++;
                }
                if (read >= count && quietUntil == Long.MAX_VALUE) {
                    quietUntil = System.currentTimeMillis() + 1000;
                }
            }
            System.out.println("END " + read);
            System.out.flush();
        }
    }
}
