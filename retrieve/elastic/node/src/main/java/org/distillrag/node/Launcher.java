package org.distillrag.node;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.CountDownLatch;

import org.opensearch.common.settings.Settings;
import org.opensearch.core.common.transport.TransportAddress;
import org.opensearch.env.Environment;
import org.opensearch.http.HttpServerTransport;
import org.opensearch.node.InternalSettingsPreparer;
import org.opensearch.node.Node;
import org.opensearch.plugins.Plugin;

/**
 * Runs one OpenSearch node in this JVM, for distill's tests and for trying
 * distill against a real cluster: HTTP on 127.0.0.1, no security plugin,
 * everything under the home directory given as the only argument.
 *
 * <p>The modules a distribution would load from its modules folder (HTTP
 * transport, analysis-common, painless) and, when its jars are on the
 * class path, the k-NN plugin are loaded from the class path. When the
 * home directory holds a file named basic-auth (one line, USER:PASSWORD),
 * every request must carry those credentials (see {@link BasicAuthPlugin}).
 *
 * <p>Once the node answers, the launcher writes HOME/http.addr (host:port of
 * the HTTP server, written to a temporary name and renamed) and waits until
 * it is told to stop (SIGTERM, SIGINT), then closes the node.
 */
public final class Launcher {
    private Launcher() {}

    /** Node is subclassed only to reach the constructor that takes class-path plugins. */
    static final class ClasspathNode extends Node {
        ClasspathNode(Environment env, Collection<Class<? extends Plugin>> plugins) {
            super(env, plugins, true);
        }
    }

    public static void main(String[] args) throws Exception {
        if (args.length != 1) {
            System.err.println("usage: Launcher HOME");
            System.exit(2);
        }
        Path home = Path.of(args[0]).toAbsolutePath();
        Files.createDirectories(home.resolve("config"));
        Settings settings = Settings.builder()
            .put("path.home", home.toString())
            .put("path.data", home.resolve("data").toString())
            .put("path.logs", home.resolve("logs").toString())
            .put("cluster.name", "distill")
            .put("node.name", "distill-0")
            .put("discovery.type", "single-node")
            .put("network.host", "127.0.0.1")
            .put("http.port", System.getProperty("distill.http.port", "0"))
            .put("transport.port", "0")
            // A test machine's disk may be fuller than the watermarks allow.
            .put("cluster.routing.allocation.disk.threshold_enabled", false)
            .put("action.auto_create_index", false)
            .build();
        List<Class<? extends Plugin>> plugins = new ArrayList<>(List.of(
            org.opensearch.transport.Netty4Plugin.class,
            org.opensearch.analysis.common.CommonAnalysisPlugin.class,
            org.opensearch.painless.PainlessPlugin.class));
        Class<? extends Plugin> knn = optionalPlugin("org.opensearch.knn.plugin.KNNPlugin");
        if (knn != null) {
            plugins.add(knn);
        }
        if (Files.exists(home.resolve(BasicAuthPlugin.FILE))) {
            plugins.add(BasicAuthPlugin.class);
        }
        Environment env = InternalSettingsPreparer.prepareEnvironment(
            settings, Collections.emptyMap(), home.resolve("config"), () -> "distill-0");
        Node node = new ClasspathNode(env, plugins);
        CountDownLatch stopped = new CountDownLatch(1);
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            try {
                node.close();
            } catch (IOException e) {
                System.err.println("closing the node: " + e);
            }
            stopped.countDown();
        }, "distill-node-stop"));
        node.start();

        TransportAddress addr = node.injector().getInstance(HttpServerTransport.class).boundAddress().publishAddress();
        Path tmp = home.resolve("http.addr.tmp");
        Files.writeString(tmp, addr.getAddress() + ":" + addr.getPort() + "\n", StandardCharsets.UTF_8);
        Files.move(tmp, home.resolve("http.addr"), StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
        System.out.println("distill-node: listening on http://" + addr.getAddress() + ":" + addr.getPort()
            + (knn != null ? " (k-NN plugin loaded)" : " (no k-NN plugin)"));
        stopped.await();
    }

    @SuppressWarnings("unchecked")
    private static Class<? extends Plugin> optionalPlugin(String name) {
        try {
            return (Class<? extends Plugin>) Class.forName(name);
        } catch (ClassNotFoundException e) {
            return null;
        }
    }
}
