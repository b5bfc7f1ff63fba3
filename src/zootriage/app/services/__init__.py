"""What the endpoints do, kept out of the routers so each router only maps HTTP to these calls."""
