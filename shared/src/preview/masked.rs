//! A [`Diff`] with every value the run read from a Secret masked, in every text it carries: the
//! objects' diffs, the API server's refusals, the build and render failures, the images.

use super::{Diff, HelmReleaseDiff, ImageChange, KustomizationDiff, ObjectDiff};
use crate::secret_value::SecretValues;

/// `diff` with the values of `secrets` masked.
pub(super) fn diff(mut diff: Diff, secrets: &SecretValues) -> Diff {
    if secrets.is_empty() {
        return diff;
    }
    let mask = |text: &mut String| *text = secrets.mask(text);
    mask(&mut diff.compared);
    for KustomizationDiff { objects, error, helm_releases, .. } in &mut diff.kustomizations {
        error.iter_mut().for_each(mask);
        objects.iter_mut().for_each(|object| masked_object(object, &mask));
        for HelmReleaseDiff { chart, objects, error, .. } in helm_releases {
            chart.iter_mut().chain(error.iter_mut()).for_each(mask);
            objects.iter_mut().for_each(|object| masked_object(object, &mask));
        }
    }
    diff
}

fn masked_object(object: &mut ObjectDiff, mask: &impl Fn(&mut String)) {
    object.diff.iter_mut().chain(object.message.iter_mut()).for_each(mask);
    for ImageChange { from, to } in &mut object.images {
        from.iter_mut().chain(to.iter_mut()).for_each(mask);
    }
}
