package dev.rustberg.rck;

import java.lang.reflect.Method;
import java.util.Optional;
import org.junit.jupiter.api.extension.ExtensionContext;
import org.junit.jupiter.api.extension.InvocationInterceptor;
import org.junit.jupiter.api.extension.ReflectiveInvocationContext;
import org.opentest4j.TestAbortedException;

/**
 * Skips a test where the catalog's /v1/config leaves out an endpoint the test needs: the Java
 * client itself refuses such a call ("Server does not support endpoint"), before any request,
 * from the endpoints the server advertised. Nothing else turns a failure into a skip.
 */
public class UnsupportedEndpointIsSkipped implements InvocationInterceptor {
  static final String CLIENT_REFUSAL = "Server does not support endpoint";

  @Override
  public void interceptTestMethod(
      Invocation<Void> invocation,
      ReflectiveInvocationContext<Method> invocationContext,
      ExtensionContext extensionContext)
      throws Throwable {
    skipIfUnadvertised(invocation);
  }

  @Override
  public void interceptTestTemplateMethod(
      Invocation<Void> invocation,
      ReflectiveInvocationContext<Method> invocationContext,
      ExtensionContext extensionContext)
      throws Throwable {
    skipIfUnadvertised(invocation);
  }

  private static void skipIfUnadvertised(Invocation<Void> invocation) throws Throwable {
    try {
      invocation.proceed();
    } catch (Throwable t) {
      Optional<String> endpoint = unadvertised(t);
      if (endpoint.isPresent()) {
        throw new TestAbortedException("/v1/config does not advertise " + endpoint.get(), t);
      }
      throw t;
    }
  }

  /**
   * The endpoint named by the client's refusal, anywhere in the cause chain, or quoted by an
   * assertion that expected another exception and got the refusal instead.
   */
  static Optional<String> unadvertised(Throwable t) {
    String quoted = UnsupportedOperationException.class.getName() + ": " + CLIENT_REFUSAL;
    for (Throwable cause = t; cause != null; cause = cause.getCause()) {
      String message = cause.getMessage();
      if (message == null) {
        continue;
      }
      int at = -1;
      if (cause instanceof UnsupportedOperationException && message.startsWith(CLIENT_REFUSAL)) {
        at = 0;
      } else if (cause instanceof AssertionError && message.contains(quoted)) {
        at = message.indexOf(quoted) + quoted.length() - CLIENT_REFUSAL.length();
      }
      if (at >= 0) {
        String refusal = message.substring(at).lines().findFirst().orElse("");
        return Optional.of(refusal.substring(refusal.indexOf(':') + 1).trim());
      }
    }
    return Optional.empty();
  }
}
