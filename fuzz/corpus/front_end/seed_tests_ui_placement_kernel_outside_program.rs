#[pld::kernel]
pub fn publish(data: &mut DistributedTensor<f32>) {
    fill(data, 0.0);
}

fn main() {}
