fn helper() {
    pld::launch!(publish(data), device = 0);
}

fn main() {
    helper();
}
