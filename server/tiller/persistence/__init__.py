"""Where sessions are kept between server processes: append-only JSON Lines files."""
