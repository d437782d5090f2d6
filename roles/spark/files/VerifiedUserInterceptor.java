// Spark Connect trusts the user_id each request carries in its UserContext: any client could claim
// any name. nginx asks connect_auth.py who the caller's token belongs to and passes that name on as
// the gRPC header x-sparkfleet-user (replacing whatever the client sent). This interceptor, loaded
// by the Connect server (spark.connect.grpc.interceptor.classes), refuses:
//   - a call without that header (it did not come through nginx: e.g. a local process on loopback);
//   - a request whose user_id is not that name ("*" is the cluster token's holder: any user_id).
// Compiled on the master against the Connect server's own jar: gRPC is shaded there under
// org.sparkproject.connect.grpc. The requests are read by reflection (every Spark Connect request
// has getUserContext()), so the class does not depend on the generated protobuf classes.
package org.sparkfleet.connect;

import org.sparkproject.connect.grpc.ForwardingServerCallListener;
import org.sparkproject.connect.grpc.Metadata;
import org.sparkproject.connect.grpc.ServerCall;
import org.sparkproject.connect.grpc.ServerCallHandler;
import org.sparkproject.connect.grpc.ServerInterceptor;
import org.sparkproject.connect.grpc.Status;

public class VerifiedUserInterceptor implements ServerInterceptor {
    static final Metadata.Key<String> VERIFIED_USER =
        Metadata.Key.of("x-sparkfleet-user", Metadata.ASCII_STRING_MARSHALLER);
    static final String ANY_USER = "*";

    @Override
    public <Q, R> ServerCall.Listener<Q> interceptCall(
            ServerCall<Q, R> call, Metadata headers, ServerCallHandler<Q, R> next) {
        final String verified = headers.get(VERIFIED_USER);
        if (verified == null || verified.isEmpty()) {
            call.close(Status.UNAUTHENTICATED.withDescription(
                "no verified user: connect through the cluster's TLS endpoint with your token"), new Metadata());
            return new ServerCall.Listener<Q>() {};
        }
        ServerCall.Listener<Q> listener = next.startCall(call, headers);
        if (ANY_USER.equals(verified)) {
            return listener;
        }
        return new ForwardingServerCallListener.SimpleForwardingServerCallListener<Q>(listener) {
            private boolean refused;

            @Override
            public void onMessage(Q message) {
                if (refused) {
                    return;
                }
                String claimed = userId(message);
                if (claimed != null && !claimed.equals(verified)) {
                    refused = true;
                    call.close(Status.PERMISSION_DENIED.withDescription(
                        "user_id '" + claimed + "' is not the user this token belongs to ('" + verified + "')"),
                        new Metadata());
                    return;
                }
                super.onMessage(message);
            }

            @Override
            public void onHalfClose() {
                // A refused call never reaches Spark: the handler runs its method on half-close.
                if (!refused) {
                    super.onHalfClose();
                }
            }
        };
    }

    // The request's user_id; null when the message carries no UserContext (not a session call).
    static String userId(Object message) {
        try {
            Object context = message.getClass().getMethod("getUserContext").invoke(message);
            Object id = context.getClass().getMethod("getUserId").invoke(context);
            return id == null ? "" : id.toString();
        } catch (NoSuchMethodException err) {
            return null;
        } catch (ReflectiveOperationException err) {
            // Unreadable: treat as a claim of nobody, which never equals a verified name.
            return "";
        }
    }
}
