// Representative Services follow in the next commit.
