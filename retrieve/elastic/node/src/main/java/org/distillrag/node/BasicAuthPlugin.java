package org.distillrag.node;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.util.Base64;
import java.util.function.UnaryOperator;

import org.opensearch.common.settings.Settings;
import org.opensearch.common.util.concurrent.ThreadContext;
import org.opensearch.core.rest.RestStatus;
import org.opensearch.env.Environment;
import org.opensearch.plugins.ActionPlugin;
import org.opensearch.plugins.Plugin;
import org.opensearch.rest.BytesRestResponse;
import org.opensearch.rest.RestChannel;
import org.opensearch.rest.RestHandler;
import org.opensearch.rest.RestRequest;
import org.opensearch.client.node.NodeClient;

/**
 * Makes the node check HTTP basic credentials, so that distill's handling
 * of a refused login can be tried against a real node without the
 * security plugin (which Maven Central does not serve for this version).
 * The only user and password come from HOME/basic-auth (USER:PASSWORD).
 * It is a check for tests, not protection: the node still speaks plain
 * HTTP on loopback.
 */
public final class BasicAuthPlugin extends Plugin implements ActionPlugin {
    static final String FILE = "basic-auth";

    private final byte[] expected;

    public BasicAuthPlugin(Settings settings) {
        Path file = Path.of(Environment.PATH_HOME_SETTING.get(settings)).resolve(FILE);
        try {
            String line = Files.readString(file, StandardCharsets.UTF_8).strip();
            if (!line.contains(":")) {
                throw new IllegalArgumentException(file + ": want one line USER:PASSWORD");
            }
            expected = ("Basic " + Base64.getEncoder().encodeToString(line.getBytes(StandardCharsets.UTF_8)))
                .getBytes(StandardCharsets.UTF_8);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    @Override
    public UnaryOperator<RestHandler> getRestHandlerWrapper(ThreadContext threadContext) {
        return handler -> new RestHandler.Wrapper(handler) {
            @Override
            public void handleRequest(RestRequest request, RestChannel channel, NodeClient client) throws Exception {
                String got = request.header("Authorization");
                if (got != null && MessageDigest.isEqual(expected, got.getBytes(StandardCharsets.UTF_8))) {
                    super.handleRequest(request, channel, client);
                    return;
                }
                String reason = got == null ? "missing authentication credentials" : "invalid user name or password";
                BytesRestResponse res = new BytesRestResponse(RestStatus.UNAUTHORIZED, "application/json",
                    "{\"error\":{\"type\":\"security_exception\",\"reason\":\"" + reason + "\"},\"status\":401}");
                res.addHeader("WWW-Authenticate", "Basic realm=\"distill\"");
                channel.sendResponse(res);
            }
        };
    }
}
