// A closure with a declared `pld::Result` return type may call collectives: their `?` returns
// from the closure, whose caller passes the error on.
#[pld::program]
mod demo {
    #[pld::host]
    pub fn run() -> Vec<f32> {
        let data = window!(f32, [4]);
        for r in ranks() {
            stage_in!(data, r, vec![1.0; 4]);
        }
        let step = || -> pld::Result<()> {
            all_reduce!(data);
            Ok(())
        };
        step()?;
        let mut out = vec![0.0; 4];
        stage_out!(data, 0, out);
        out
    }
}

fn main() {
    let world = pld::World::local(2).unwrap();
    assert_eq!(demo::load(&world).unwrap().run().unwrap(), vec![2.0; 4]);
}
