//! Azure Storage (Blob and Queue) clients, connection strings and Shared Key signing.
