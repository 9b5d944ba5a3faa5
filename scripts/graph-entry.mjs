// Entry point of static/vendor/graph.js: Cytoscape with the edge-drawing and
// dagre layout extensions registered, exposed as window.cytoscape. Bundling
// lets edgehandles find its lodash helpers without a global lodash.
import cytoscape from 'cytoscape';
import edgehandles from 'cytoscape-edgehandles';
import dagre from 'cytoscape-dagre';

cytoscape.use(edgehandles);
cytoscape.use(dagre);
window.cytoscape = cytoscape;
