#[pld::program]
mod demo {
    #[pld::host]
    pub fn run() {
        let inbox = window!(f32, [8]);
        recv!(inbox, from = 0, to = 1, op = sum);
    }
}

fn main() {
    let world = pld::World::local(4).unwrap();
    let _ = demo::load(&world).unwrap().run();
}
