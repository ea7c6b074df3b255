"""The gRPC services. Domain errors become status codes here, and only here."""
