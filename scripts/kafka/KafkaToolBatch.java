// Runs several of Apache Kafka's command-line tools, one after another, in
// one JVM, so that tests pay the JVM's start-up once instead of once per
// tool run. Used by internal/testenv (javatools.go).
//
// Input (stdin): one run per line, the tool's main class and its arguments
// separated by the ASCII unit separator (0x1f), optionally preceded by a
// field "stdin=<file>": the run reads that file as its standard input
// (kafka-console-producer reads records there). Without it the run reads
// an empty input, so that no tool consumes the lines of the runs after it.
// Output (stdout): per run, a line "RUN <exit code> <stdout bytes> <stderr
// bytes>" followed by the run's stdout and stderr bytes (UTF-8).
//
// The tools end with org.apache.kafka.common.utils.internals.Exit.exit,
// whose procedure is replaced here to end only the run. As in a process,
// the first exit of a run decides its code, even when the tool catches what
// the replaced procedure throws and exits again; a run that throws without
// exiting reports exit code 1 and the stack trace on its stderr.

import java.io.BufferedReader;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.FileInputStream;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.lang.reflect.InvocationTargetException;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;

import org.apache.kafka.common.utils.internals.Exit;

public class KafkaToolBatch {
    static final class ExitCalled extends RuntimeException {
        final int code;

        ExitCalled(int code) {
            super("exit " + code, null, false, false);
            this.code = code;
        }
    }

    static Integer firstExit;

    static void exit(int code) {
        if (firstExit == null) {
            firstExit = code;
        }
        throw new ExitCalled(code);
    }

    public static void main(String[] argv) throws Exception {
        PrintStream realOut = System.out;
        PrintStream realErr = System.err;
        InputStream realIn = System.in;
        Exit.setExitProcedure((code, msg) -> exit(code));
        Exit.setHaltProcedure((code, msg) -> exit(code));
        BufferedReader in = new BufferedReader(new InputStreamReader(realIn, StandardCharsets.UTF_8));
        String line;
        while ((line = in.readLine()) != null) {
            if (line.isEmpty()) {
                continue;
            }
            String[] parts = line.split("\u001f", -1);
            InputStream runIn = new ByteArrayInputStream(new byte[0]);
            if (parts[0].startsWith("stdin=")) {
                runIn = new FileInputStream(parts[0].substring("stdin=".length()));
                parts = Arrays.copyOfRange(parts, 1, parts.length);
            }
            ByteArrayOutputStream out = new ByteArrayOutputStream();
            ByteArrayOutputStream err = new ByteArrayOutputStream();
            PrintStream runOut = new PrintStream(out, true, StandardCharsets.UTF_8);
            PrintStream runErr = new PrintStream(err, true, StandardCharsets.UTF_8);
            System.setOut(runOut);
            System.setErr(runErr);
            System.setIn(runIn);
            int code = 0;
            firstExit = null;
            try {
                Class.forName(parts[0]).getMethod("main", String[].class)
                        .invoke(null, (Object) Arrays.copyOfRange(parts, 1, parts.length));
            } catch (InvocationTargetException e) {
                Throwable cause = e.getCause();
                if (cause instanceof ExitCalled) {
                    code = ((ExitCalled) cause).code;
                } else {
                    cause.printStackTrace(runErr);
                    code = 1;
                }
            } catch (ExitCalled e) {
                code = e.code;
            } catch (Throwable e) {
                e.printStackTrace(runErr);
                code = 1;
            }
            if (firstExit != null) {
                code = firstExit;
            }
            runOut.flush();
            runErr.flush();
            System.setOut(realOut);
            System.setErr(realErr);
            System.setIn(realIn);
            runIn.close();
            byte[] o = out.toByteArray();
            byte[] e = err.toByteArray();
            realOut.print("RUN " + code + " " + o.length + " " + e.length + "\n");
            realOut.write(o);
            realOut.write(e);
            realOut.flush();
        }
        realOut.flush();
        System.exit(0);
    }
}
