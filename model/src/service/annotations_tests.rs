// Table-driven tests follow in the next commit.
