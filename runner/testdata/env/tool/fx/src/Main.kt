fun greet(): String = "hello"
