"""Generated MFC-style sample data for every task: small datasets to try mfscore on without evaluation data.

Each generator writes a dataset (index, reference, journal tables, masks, system output) under a directory and
returns where its files are; the data is seeded, so the same call writes the same data. Used by ``make demo``,
the benchmarks, the tests and ``mfscore sample-data TASK DIR`` (which prints the command that scores it).

- ``detection.generate_detection_dataset(directory, n_trials)``: manipulation detection trials, targets with one
  to three journal operations, a system whose score depends on how hard they are (``mfscore detection``).
- ``masks.generate_mask_dataset(directory, n_probes)``: image localization, colour (NC2017) or bit-plane
  (MFC18, PNG or JPEG 2000) reference masks and grey system masks (``mfscore mask``).
- ``video.sample_video_dataset(root)``: four small videos with HDF5 reference and system masks
  (``mfscore video-spatial``); ``video.sample_temporal_dataset(root)`` the same videos' frame intervals and
  ``video.generate_temporal_dataset(root, n_probes)`` random ones (``mfscore video-temporal``).
- ``provenance.generate_provenance_dataset(root, n_probes)``: provenance journals and system graphs as JSON
  (``mfscore provenance-filtering``, ``mfscore provenance-graph``).
- ``examples.example(task)(directory)``: a small run of a registered task on fresh data, as its command-line
  arguments; ``examples.example_arguments(task, data_dir, out_dir)`` the whole command line.

Importing this package imports nothing; each module imports numpy and pandas (``video`` h5py too).
"""
