// A Kafka Connect source connector that tails a text file and sends each
// complete line to a topic as a string, for the compatibility tests that
// run Kafka Connect against Tributary (internal/testenv/kafkaconnect.go
// puts it on the worker's classpath). Apache Kafka's own file connectors
// are not among the Maven artifacts the tests can fetch, so this one
// stands in for them, built on the public Connect API only.
//
// Configuration: "file" (the path to tail) and "topic". One task reads the
// file; its source offset is the byte position after the last line sent,
// stored by the worker, so that a restarted task goes on where it left off.
// A last line without its newline yet is not sent until the newline comes.

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import org.apache.kafka.common.config.ConfigDef;
import org.apache.kafka.connect.connector.Task;
import org.apache.kafka.connect.data.Schema;
import org.apache.kafka.connect.errors.ConnectException;
import org.apache.kafka.connect.source.SourceConnector;
import org.apache.kafka.connect.source.SourceRecord;
import org.apache.kafka.connect.source.SourceTask;

public class LineFileSourceConnector extends SourceConnector {
    static final String VERSION = "1";
    static final ConfigDef CONFIG = new ConfigDef()
            .define("file", ConfigDef.Type.STRING, ConfigDef.NO_DEFAULT_VALUE, new ConfigDef.NonEmptyString(),
                    ConfigDef.Importance.HIGH, "Path of the file whose lines are sent.")
            .define("topic", ConfigDef.Type.STRING, ConfigDef.NO_DEFAULT_VALUE, new ConfigDef.NonEmptyString(),
                    ConfigDef.Importance.HIGH, "Topic the lines are sent to.");

    private Map<String, String> props;

    @Override
    public String version() {
        return VERSION;
    }

    @Override
    public void start(Map<String, String> props) {
        CONFIG.parse(props);
        this.props = props;
    }

    @Override
    public Class<? extends Task> taskClass() {
        return LineTask.class;
    }

    @Override
    public List<Map<String, String>> taskConfigs(int maxTasks) {
        return List.of(props); // one file, one reader
    }

    @Override
    public void stop() {
    }

    @Override
    public ConfigDef config() {
        return CONFIG;
    }

    /** Reads the file's new complete lines at each poll. */
    public static class LineTask extends SourceTask {
        private static final int CHUNK = 64 * 1024;

        private Path file;
        private String topic;
        private Map<String, String> partition;
        private long position;
        private FileChannel channel;
        private final ByteBuffer buf = ByteBuffer.allocate(CHUNK);

        @Override
        public String version() {
            return VERSION;
        }

        @Override
        public void start(Map<String, String> props) {
            file = Path.of(props.get("file"));
            topic = props.get("topic");
            partition = Map.of("file", file.toString());
            Map<String, Object> offset = context.offsetStorageReader().offset(partition);
            if (offset != null && offset.get("position") instanceof Number n) {
                position = n.longValue();
            }
        }

        @Override
        public List<SourceRecord> poll() throws InterruptedException {
            try {
                if (channel == null) {
                    try {
                        channel = FileChannel.open(file, StandardOpenOption.READ);
                    } catch (NoSuchFileException e) {
                        Thread.sleep(100);
                        return null;
                    }
                }
                buf.clear();
                int n = channel.read(buf, position);
                List<SourceRecord> records = new ArrayList<>();
                int start = 0;
                for (int i = 0; i < Math.max(n, 0); i++) {
                    if (buf.get(i) == '\n') {
                        String line = new String(buf.array(), start, i - start, StandardCharsets.UTF_8);
                        start = i + 1;
                        Map<String, Long> offset = Map.of("position", position + start);
                        records.add(new SourceRecord(partition, offset, topic, null, null, null, Schema.STRING_SCHEMA, line));
                    }
                }
                if (records.isEmpty()) {
                    if (n == CHUNK) {
                        throw new ConnectException(file + " has a line longer than " + CHUNK + " bytes at byte " + position);
                    }
                    Thread.sleep(100);
                    return null;
                }
                position += start;
                return records;
            } catch (IOException e) {
                throw new ConnectException("reading " + file + " at byte " + position, e);
            }
        }

        @Override
        public void stop() {
            try {
                if (channel != null) {
                    channel.close();
                }
            } catch (IOException e) {
                // Nothing more is read from it.
            }
        }
    }
}
